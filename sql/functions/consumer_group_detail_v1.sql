-- queen.consumer_group_detail_v1(p_tenant, p_group) -> jsonb, or NULL for an unknown group
--
-- One consumer group's positions for the admin detail endpoint, as an object keyed by queue
-- name: {<queue>: {partitions: [{partition, partitionId, workerId, lastConsumedAt,
-- totalConsumed, committedOffset, offsetLag, timeLagSeconds, leaseActive}]}}, partitions
-- by name. The figures are queen.consumer_group_lags_v1's rows for the group, time lag
-- rounded to milliseconds.
--
-- Read only: no locks beyond the statement's snapshot. No notifications.
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
