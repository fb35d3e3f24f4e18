-- queen.ephemeral_declarations_v1(p_tenant) -> jsonb
--
-- Every declared ephemeral queue of a tenant, by name: [{queue, options}], options as
-- queen.ephemeral_declaration_v1 answers them. For GET /api/v1/ephemeral/queues, which
-- adds the queues this broker holds in memory without a declaration.
--
-- One scan of the tenant's rows (the primary key's tenant prefix). Read only: no locks.
-- No notifications.
CREATE OR REPLACE FUNCTION queen.ephemeral_declarations_v1(p_tenant text)
RETURNS jsonb LANGUAGE sql STABLE AS $$
    SELECT COALESCE(jsonb_agg(jsonb_build_object(
               'queue', e.queue,
               'options', jsonb_build_object('maxBytes', e.max_bytes,
                              'maxLength', e.max_length, 'policy', e.policy,
                              'ttlSeconds', e.ttl_seconds,
                              'leaseSeconds', e.lease_seconds,
                              'retryLimit', e.retry_limit,
                              'windowBuffer', e.window_buffer))
             ORDER BY e.queue), '[]'::jsonb)
      FROM queen.ephemeral_queues e
     WHERE e.tenant = p_tenant;
$$;
