-- queen.consumer_groups_v1(p_tenant) -> jsonb array, one object per (group, queue)
--
-- The tenant's consumer groups in the shape of GET /api/v1/consumer-groups, ordered by
-- group and queue: {name, topics, queueName, members (distinct workers holding a live
-- lease), partitionsWithLag, totalLag, maxTimeLag, state, subscriptionMode,
-- subscriptionTimestamp, subscriptionCreatedAt}. state is 'Stable' while the largest time
-- lag is under a minute, 'Lagging' while the group consumed within the last hour or holds a
-- live lease, 'Dead' otherwise. Figures from queen.consumer_group_lags_v1; the subscription
-- from queen.consumer_groups_metadata ('all' when the group has no subscription row).
--
-- PL/pgSQL: Citus plans no parameterized LANGUAGE sql function reading a reference
-- table (queen.consumer_groups_metadata) on its layout.
--
-- Read only: no locks beyond the statement's snapshot. No notifications.
CREATE OR REPLACE FUNCTION queen.consumer_groups_v1(p_tenant text)
RETURNS jsonb LANGUAGE plpgsql STABLE AS $$
BEGIN
    RETURN (SELECT coalesce(jsonb_agg(x.row ORDER BY x.consumer_group, x.queue_name), '[]'::jsonb)
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
    ) x);
END;
$$;
