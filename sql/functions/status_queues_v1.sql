-- queen.status_queues_v1(p_tenant, p_from, p_to, p_namespace, p_task, p_limit, p_offset)
--   -> jsonb
--
-- The status list: {queues: [{name, namespace, task, partitions, messages: {total, pending,
-- processing, completed, deadLetter}, pushed, deadLettered, lagSeconds}], total}, queues by
-- name, paged by p_limit/p_offset, total counting every match. Figures and window as in
-- queen.status_queue_rows_v1; lagSeconds rounded to milliseconds.
--
-- PL/pgSQL, so that the Citus layout plans it (docs/scale-out.md, "What runs, and how").
--
-- Read only: no locks. No notifications.
CREATE OR REPLACE FUNCTION queen.status_queues_v1(
    p_tenant text, p_from timestamptz, p_to timestamptz, p_namespace text, p_task text,
    p_limit integer, p_offset integer)
RETURNS jsonb LANGUAGE plpgsql STABLE AS $$
BEGIN
    RETURN (
    WITH rows AS (
        SELECT * FROM queen.status_queue_rows_v1(p_tenant, p_from, p_to, NULL, p_namespace,
                                                 p_task)
    ), page AS (
        SELECT * FROM rows ORDER BY name LIMIT p_limit OFFSET p_offset
    )
    SELECT jsonb_build_object(
        'queues', coalesce(jsonb_agg(jsonb_build_object(
            'name', r.name, 'namespace', r.namespace, 'task', r.task,
            'partitions', r.partitions,
            'messages', jsonb_build_object('total', r.total, 'pending', r.pending,
                                           'processing', r.processing,
                                           'completed', r.completed,
                                           'deadLetter', r.dead_letter),
            'pushed', r.pushed, 'deadLettered', r.dead_lettered,
            'lagSeconds', round(r.lag_seconds::numeric, 3)) ORDER BY r.name), '[]'::jsonb),
        'total', (SELECT count(*) FROM rows))
    FROM page r
    );
END;
$$;
