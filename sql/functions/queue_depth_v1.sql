-- queen.queue_depth_v1(p_tenant, p_queue, p_group) -> jsonb, or NULL for an unknown queue
--
-- The queue depth document: {queue, group, pending, partitionsPending, conflation (always
-- false), effectivePending (= pending), partitions: [{partition, pending}]}, partitions by
-- name. With p_group: per partition, last_offset minus that group's cursor (-1 where it has
-- none). Without: last_offset minus the cursor furthest behind among queue mode and every
-- group; queue mode counts from -1 where it never popped, so a partition that only bus
-- groups consumed still counts its messages as pending.
--
-- Read only: no locks. No notifications.
CREATE OR REPLACE FUNCTION queen.queue_depth_v1(p_tenant text, p_queue text, p_group text)
RETURNS jsonb LANGUAGE sql STABLE AS $$
    WITH q AS (
        SELECT q.id FROM queen.queues q WHERE q.tenant = p_tenant AND q.name = p_queue
    ), parts AS (
        SELECT p.name,
               greatest(p.last_offset - coalesce(
                   CASE WHEN p_group IS NOT NULL THEN
                            (SELECT c.committed FROM queen.log_consumers c
                             WHERE c.partition_id = p.id AND c.consumer_group = p_group)
                        ELSE least(
                            coalesce((SELECT c.committed FROM queen.log_consumers c
                                      WHERE c.partition_id = p.id
                                        AND c.consumer_group = '__QUEUE_MODE__'), -1),
                            (SELECT min(c.committed) FROM queen.log_consumers c
                             WHERE c.partition_id = p.id)) END, -1), 0) AS pending
        FROM queen.log_partitions p JOIN q ON p.queue_id = q.id
    )
    SELECT jsonb_build_object(
        'queue', p_queue, 'group', p_group,
        'pending', coalesce((SELECT sum(pending) FROM parts), 0),
        'partitionsPending', (SELECT count(*) FROM parts WHERE pending > 0),
        'conflation', false,
        'effectivePending', coalesce((SELECT sum(pending) FROM parts), 0),
        'partitions', coalesce((SELECT jsonb_agg(jsonb_build_object(
                                    'partition', name, 'pending', pending) ORDER BY name)
                                FROM parts), '[]'::jsonb))
    FROM q;
$$;
