-- queen.status_queue_v1(p_tenant, p_queue, p_from, p_to) -> jsonb, or NULL for an unknown
--   queue
--
-- One queue's status document: the entry queen.status_queues_v1 lists for it ({name,
-- namespace, task, messages, pushed, deadLettered, lagSeconds}, plus window: {from, to})
-- and partitions: [{name, lastWriteAt, messages: {total, pending, processing, completed,
-- deadLetter}}], by name. Figures from queen.status_queue_rows_v1 and
-- queen.partition_stats_v1.
--
-- PL/pgSQL, so that the Citus layout plans it (docs/scale-out.md, "What runs, and how").
--
-- Read only: no locks. No notifications.
CREATE OR REPLACE FUNCTION queen.status_queue_v1(
    p_tenant text, p_queue text, p_from timestamptz, p_to timestamptz)
RETURNS jsonb LANGUAGE plpgsql STABLE AS $$
BEGIN
    RETURN (
    SELECT jsonb_build_object(
        'name', r.name, 'namespace', r.namespace, 'task', r.task,
        'window', jsonb_build_object('from', p_from, 'to', p_to),
        'messages', jsonb_build_object('total', r.total, 'pending', r.pending,
                                       'processing', r.processing, 'completed', r.completed,
                                       'deadLetter', r.dead_letter),
        'pushed', r.pushed, 'deadLettered', r.dead_lettered,
        'lagSeconds', round(r.lag_seconds::numeric, 3),
        'partitions', coalesce((
            SELECT jsonb_agg(jsonb_build_object(
                'name', s.partition_name, 'lastWriteAt', s.last_write_at,
                'messages', jsonb_build_object('total', s.total, 'pending', s.pending,
                                               'processing', s.processing,
                                               'completed', s.completed,
                                               'deadLetter', s.dead_letter))
                ORDER BY s.partition_name)
            FROM queen.partition_stats_v1(p_tenant, p_queue) s), '[]'::jsonb))
    FROM queen.status_queue_rows_v1(p_tenant, p_from, p_to, p_queue, NULL, NULL) r
    );
END;
$$;
