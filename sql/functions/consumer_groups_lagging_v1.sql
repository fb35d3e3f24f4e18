-- queen.consumer_groups_lagging_v1(p_tenant, p_min_lag_seconds) -> jsonb array
--
-- The partitions on which some consumer group of the tenant is behind by at least
-- p_min_lag_seconds (and by at least one message), for the lagging-groups admin endpoint:
-- [{consumer_group, queue_name, partition_name, partition_id, worker_id, offset_lag,
-- time_lag_seconds, lag_hours, oldest_unconsumed_at, last_consumed_at}], the largest time
-- lag first. Figures from queen.consumer_group_lags_v1; '[]' when none lags.
--
-- Read only: no locks beyond the statement's snapshot. No notifications.
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
