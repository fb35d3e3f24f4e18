-- queen.ephemeral_declare_v1(p_tenant, p_queue, p_options) -> void
--
-- Stores (or replaces) the declaration of an ephemeral queue: p_options is the checked
-- options object the broker built (src/domain/ephemeral/options.rs, every key present:
-- maxBytes, maxLength, policy, ttlSeconds, leaseSeconds, retryLimit, windowBuffer, the
-- last three may be null). A replaced declaration keeps its created_at.
--
-- One upsert on queen.ephemeral_queues' primary key: a row lock. No notifications.
CREATE OR REPLACE FUNCTION queen.ephemeral_declare_v1(p_tenant text, p_queue text,
                                                      p_options jsonb)
RETURNS void LANGUAGE sql AS $$
    INSERT INTO queen.ephemeral_queues AS e
           (tenant, queue, max_bytes, max_length, policy, ttl_seconds, lease_seconds,
            retry_limit, window_buffer)
    VALUES (p_tenant, p_queue, (p_options->>'maxBytes')::bigint,
            (p_options->>'maxLength')::bigint, p_options->>'policy',
            (p_options->>'ttlSeconds')::bigint, (p_options->>'leaseSeconds')::bigint,
            (p_options->>'retryLimit')::integer,
            NULLIF(p_options->'windowBuffer', 'null'::jsonb))
    ON CONFLICT (tenant, queue) DO UPDATE
       SET max_bytes = EXCLUDED.max_bytes, max_length = EXCLUDED.max_length,
           policy = EXCLUDED.policy, ttl_seconds = EXCLUDED.ttl_seconds,
           lease_seconds = EXCLUDED.lease_seconds, retry_limit = EXCLUDED.retry_limit,
           window_buffer = EXCLUDED.window_buffer, updated_at = now();
$$;
