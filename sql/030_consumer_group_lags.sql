-- 030_consumer_group_lags: the consumer groups' positions, for the admin endpoints.
--
-- queen.consumer_group_lags_v1(p_tenant, p_group)
--   One row per (consumer group, queue, partition) of the tenant (of one group when p_group
--   is not NULL). A group is known from its durable subscription (consumer_groups_metadata)
--   or from any cursor row; a partition without a cursor row for a known group counts from
--   offset -1 (that is where its first pop starts: partitions created after the group's
--   first contact deliver their whole backlog). Columns:
--     committed         the cursor (last offset the group is done with, -1: nothing);
--     offset_lag        last_offset - committed (messages not yet done);
--     oldest_unconsumed created_at of the segment holding committed + 1 (NULL: no lag);
--     time_lag_seconds  now - oldest_unconsumed, 0 without lag;
--     lease_active      a worker holds a lease that has not expired.
-- queen.consumer_groups_v1(p_tenant) -> jsonb array, one object per (group, queue), in the
--   shape of GET /api/v1/consumer-groups.
-- queen.consumer_groups_lagging_v1(p_tenant, p_min_lag_seconds) -> jsonb array of partitions
--   whose time lag is at least p_min_lag_seconds.
-- queen.consumer_group_detail_v1(p_tenant, p_group) -> jsonb object keyed by queue name, or
--   NULL when the group is unknown.
-- Read only: no locks beyond MVCC snapshots, no notifications.

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

CREATE OR REPLACE FUNCTION queen.consumer_groups_v1(p_tenant text)
RETURNS jsonb LANGUAGE sql STABLE AS $$
    SELECT coalesce(jsonb_agg(x.row ORDER BY x.consumer_group, x.queue_name), '[]'::jsonb)
    FROM (
        SELECT l.consumer_group, l.queue_name,
               jsonb_build_object(
                   'name', l.consumer_group,
                   'topics', jsonb_build_array(l.queue_name),
                   'queueName', l.queue_name,
                   'members', count(DISTINCT l.worker_id) FILTER (WHERE l.lease_active),
                   'partitionsWithLag', count(*) FILTER (WHERE l.offset_lag > 0),
                   'totalLag', sum(l.offset_lag),
                   'maxTimeLag', max(l.time_lag_seconds),
                   'state', CASE
                       WHEN max(l.time_lag_seconds) < 60 THEN 'Stable'
                       WHEN max(l.last_consumed_at) > now() - interval '1 hour'
                            OR bool_or(l.lease_active) THEN 'Lagging'
                       ELSE 'Dead' END,
                   'subscriptionMode', coalesce(m.subscription_mode, 'all'),
                   'subscriptionTimestamp', m.subscription_timestamp,
                   'subscriptionCreatedAt', m.created_at
               ) AS row
        FROM queen.consumer_group_lags_v1(p_tenant, NULL) l
        LEFT JOIN queen.consumer_groups_metadata m
          ON m.consumer_group = l.consumer_group AND m.queue_id = l.queue_id
        GROUP BY l.consumer_group, l.queue_name, m.subscription_mode,
                 m.subscription_timestamp, m.created_at
    ) x;
$$;

CREATE OR REPLACE FUNCTION queen.consumer_groups_lagging_v1(p_tenant text, p_min_lag_seconds double precision)
RETURNS jsonb LANGUAGE sql STABLE AS $$
    SELECT coalesce(jsonb_agg(jsonb_build_object(
               'consumer_group', l.consumer_group,
               'queue_name', l.queue_name,
               'partition_name', l.partition_name,
               'partition_id', l.partition_id::text,
               'worker_id', l.worker_id,
               'offset_lag', l.offset_lag,
               'time_lag_seconds', round(l.time_lag_seconds::numeric, 3),
               'lag_hours', round((l.time_lag_seconds / 3600)::numeric, 3),
               'oldest_unconsumed_at', l.oldest_unconsumed,
               'last_consumed_at', l.last_consumed_at
           ) ORDER BY l.time_lag_seconds DESC, l.consumer_group, l.queue_name, l.partition_name),
           '[]'::jsonb)
    FROM queen.consumer_group_lags_v1(p_tenant, NULL) l
    WHERE l.offset_lag > 0 AND l.time_lag_seconds >= p_min_lag_seconds;
$$;

CREATE OR REPLACE FUNCTION queen.consumer_group_detail_v1(p_tenant text, p_group text)
RETURNS jsonb LANGUAGE sql STABLE AS $$
    SELECT jsonb_object_agg(x.queue_name, jsonb_build_object('partitions', x.partitions))
    FROM (
        SELECT l.queue_name,
               jsonb_agg(jsonb_build_object(
                   'partition', l.partition_name,
                   'partitionId', l.partition_id::text,
                   'workerId', l.worker_id,
                   'lastConsumedAt', l.last_consumed_at,
                   'totalConsumed', l.total_consumed,
                   'committedOffset', l.committed,
                   'offsetLag', l.offset_lag,
                   'timeLagSeconds', round(l.time_lag_seconds::numeric, 3),
                   'leaseActive', l.lease_active
               ) ORDER BY l.partition_name) AS partitions
        FROM queen.consumer_group_lags_v1(p_tenant, p_group) l
        GROUP BY l.queue_name
    ) x;
$$;
