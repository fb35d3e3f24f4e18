-- queen.consumer_group_lags_v1(p_tenant, p_group) -> one row per (group, queue, partition)
--
-- The consumer groups' positions, from which the admin endpoints build their documents
-- (queen.consumer_groups_v1, queen.consumer_groups_lagging_v1 and
-- queen.consumer_group_detail_v1). Covers every group of the tenant, or one when p_group
-- is not NULL. A group is known from its durable subscription
-- (queen.consumer_groups_metadata) or from any cursor row (queen.log_consumers). A
-- partition without a cursor row for a known group counts from offset -1, because that is
-- where the group's first pop there starts: partitions created after the group's first
-- contact deliver their whole backlog.
--
-- Columns besides the names and ids:
--   committed         the cursor (the last offset the group is done with; -1: nothing);
--   last_offset       the partition's last appended offset;
--   offset_lag        last_offset - committed (messages not yet done), never negative;
--   oldest_unconsumed created_at of the segment holding committed + 1 (NULL: no lag);
--   time_lag_seconds  now - oldest_unconsumed, 0 without lag;
--   worker_id         the lease id on the row, live or not;
--   lease_active      a worker holds a lease that has not expired;
--   last_consumed_at, total_consumed  from the cursor row (0 without one).
--
-- Read only: no locks beyond the statement's snapshot. No notifications.
CREATE OR REPLACE FUNCTION queen.consumer_group_lags_v1(p_tenant text, p_group text)
RETURNS TABLE (
    consumer_group    text,
    queue_id          bigint,
    queue_name        text,
    partition_id      bigint,
    partition_name    text,
    committed         bigint,
    last_offset       bigint,
    offset_lag        bigint,
    oldest_unconsumed timestamptz,
    time_lag_seconds  double precision,
    worker_id         text,
    lease_active      boolean,
    last_consumed_at  timestamptz,
    total_consumed    bigint
) LANGUAGE sql STABLE AS $$
    WITH groups AS (
        SELECT m.consumer_group, m.queue_id
        FROM queen.consumer_groups_metadata m
        JOIN queen.queues q ON q.id = m.queue_id
        WHERE q.tenant = p_tenant AND (p_group IS NULL OR m.consumer_group = p_group)
        UNION
        SELECT DISTINCT c.consumer_group, p.queue_id
        FROM queen.log_consumers c
        JOIN queen.log_partitions p ON p.id = c.partition_id
        JOIN queen.queues q ON q.id = p.queue_id
        WHERE q.tenant = p_tenant AND (p_group IS NULL OR c.consumer_group = p_group)
    )
    SELECT g.consumer_group, q.id, q.name, p.id, p.name,
           coalesce(c.committed, -1),
           p.last_offset,
           greatest(p.last_offset - coalesce(c.committed, -1), 0),
           o.created_at,
           CASE WHEN o.created_at IS NULL THEN 0
                ELSE greatest(extract(epoch FROM now() - o.created_at), 0)::double precision END,
           c.worker_id,
           coalesce(c.worker_id IS NOT NULL AND c.lease_expires_at > now(), false),
           c.last_consumed_at,
           coalesce(c.total_consumed, 0)
    FROM groups g
    JOIN queen.queues q ON q.id = g.queue_id
    JOIN queen.log_partitions p ON p.queue_id = q.id
    LEFT JOIN queen.log_consumers c
      ON c.partition_id = p.id AND c.consumer_group = g.consumer_group
    LEFT JOIN LATERAL (
        SELECT s.created_at
        FROM queen.log_segments s
        WHERE s.partition_id = p.id
          AND p.last_offset > coalesce(c.committed, -1)
          AND s.base_offset <= coalesce(c.committed, -1) + 1
        ORDER BY s.base_offset DESC
        LIMIT 1
    ) o ON true;
$$;
