-- 009_log_lease_extend: renew every partition lease held under one lease id.
--
-- queen.log_lease_extend_v1(p_lease, p_seconds) -> (renewed, expires_at)
--   Every live lease (worker_id = p_lease, not yet expired) moves to now + p_seconds, or
--   now + the queue's lease_time (60 s when unset) when p_seconds is NULL; an expiry is
--   never shortened. renewed = number of partition leases extended (0: the lease is gone),
--   expires_at = the latest new expiry. Locks the renewed consumer rows.

CREATE OR REPLACE FUNCTION queen.log_lease_extend_v1(
    p_lease   text,
    p_seconds integer
) RETURNS TABLE (
    renewed    integer,
    expires_at timestamptz
) LANGUAGE sql VOLATILE AS $$
    WITH extended AS (
        UPDATE queen.log_consumers c SET
            lease_expires_at = greatest(
                c.lease_expires_at,
                now() + make_interval(secs => coalesce(p_seconds, q.lease_time, 60)))
        FROM queen.log_partitions p
        JOIN queen.queues q ON q.id = p.queue_id
        WHERE c.worker_id = p_lease
          AND c.lease_expires_at >= now()
          AND p.id = c.partition_id
        RETURNING c.lease_expires_at
    )
    SELECT count(*)::integer, max(e.lease_expires_at) FROM extended e;
$$;
