-- 060_tenant_leases: the lease paths that name a lease id, checked against the caller's
-- tenant. A lease id is only ever shown to the tenant that popped under it, but a lease is
-- a capability a client sends back: another tenant holding (or guessing) it must neither
-- renew nor fence with it. Both functions match only cursors of partitions whose queue
-- belongs to p_tenant; the v1 functions stay for brokers of the previous version.
--
-- queen.log_lease_extend_v2(p_tenant, p_lease, p_seconds) -> (renewed, expires_at)
--   As log_lease_extend_v1, limited to the tenant's partitions: another tenant's lease is
--   "renewed 0" (not found) and is left as it was.
-- queen.lease_require_v2(p_tenant, p_leases) -> (lease_id, live)
--   As lease_require_v1, limited to the tenant's partitions: another tenant's lease is
--   neither locked nor live, so a bundle naming it fails and changes nothing.

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
        FROM queen.log_partitions p
        JOIN queen.queues q ON q.id = p.queue_id
        WHERE c.worker_id = p_lease
          AND c.lease_expires_at >= now()
          AND p.id = c.partition_id
          AND q.tenant = p_tenant
        RETURNING c.lease_expires_at
    )
    SELECT count(*)::integer, max(e.lease_expires_at) FROM extended e;
$$;

CREATE OR REPLACE FUNCTION queen.lease_require_v2(p_tenant text, p_leases text[])
RETURNS TABLE (lease_id text, live boolean)
LANGUAGE plpgsql VOLATILE AS $$
#variable_conflict use_column
BEGIN
    PERFORM 1
    FROM queen.log_consumers c
    JOIN queen.log_partitions p ON p.id = c.partition_id
    JOIN queen.queues q ON q.id = p.queue_id
    WHERE c.worker_id = ANY (p_leases) AND q.tenant = p_tenant
    ORDER BY c.partition_id, c.consumer_group
    FOR UPDATE OF c;

    RETURN QUERY
    SELECT l.id,
           EXISTS (SELECT 1 FROM queen.log_consumers c
                   JOIN queen.log_partitions p ON p.id = c.partition_id
                   JOIN queen.queues q ON q.id = p.queue_id
                   WHERE c.worker_id = l.id
                     AND q.tenant = p_tenant
                     AND c.lease_expires_at IS NOT NULL
                     AND c.lease_expires_at >= clock_timestamp())
    FROM (SELECT DISTINCT u.id FROM unnest(p_leases) AS u (id)) l
    ORDER BY l.id;
END;
$$;
