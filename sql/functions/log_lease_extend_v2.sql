-- queen.log_lease_extend_v2(p_tenant, p_lease, p_seconds) -> (renewed, expires_at), one row
--
-- Renews every partition lease held under one lease id. Each live lease (worker_id =
-- p_lease, not yet expired; rows found through queen.lease_holders_v1) moves to now +
-- p_seconds, or now + the queue's lease_time (60 s when unset) when p_seconds is NULL; an
-- expiry is never shortened. renewed = the number of partition leases extended (0: the
-- lease is gone), expires_at = the latest new expiry.
--
-- Only partitions whose queue belongs to p_tenant are renewed (NULL: any tenant): a lease
-- id is a capability the client sends back, and another tenant's lease answers renewed 0
-- and stays as it was. The tenant rule is explained in queen.lease_require_v2.
--
-- Locks: the renewed cursor rows, to the end of the caller's transaction. No
-- notifications.
CREATE OR REPLACE FUNCTION queen.log_lease_extend_v2(
    p_tenant  text,
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
        FROM queen.lease_holders_v1(ARRAY[p_lease]) h, queen.log_partitions p
        JOIN queen.queues q ON q.id = p.queue_id
        WHERE c.partition_id = h.partition_id AND c.consumer_group = h.consumer_group
          AND c.worker_id = p_lease
          AND c.lease_expires_at >= now()
          AND p.id = c.partition_id
          AND (p_tenant IS NULL OR q.tenant = p_tenant)
        RETURNING c.lease_expires_at
    )
    SELECT count(*)::integer, max(e.lease_expires_at) FROM extended e;
$$;
