-- queen.ephemeral_declaration_v1(p_tenant, p_queue) -> jsonb
--
-- The stored declaration of one ephemeral queue as the options object the broker reads
-- back (src/domain/ephemeral/options.rs): {maxBytes, maxLength, policy, ttlSeconds,
-- leaseSeconds, retryLimit, windowBuffer}; NULL when the queue is not declared. Read by
-- the owning broker once, when the queue first appears in its memory.
--
-- One primary-key read. Read only: no locks. No notifications.
CREATE OR REPLACE FUNCTION queen.ephemeral_declaration_v1(p_tenant text, p_queue text)
RETURNS jsonb LANGUAGE sql STABLE AS $$
    SELECT jsonb_build_object('maxBytes', e.max_bytes, 'maxLength', e.max_length,
                              'policy', e.policy, 'ttlSeconds', e.ttl_seconds,
                              'leaseSeconds', e.lease_seconds,
                              'retryLimit', e.retry_limit,
                              'windowBuffer', e.window_buffer)
      FROM queen.ephemeral_queues e
     WHERE e.tenant = p_tenant AND e.queue = p_queue;
$$;
