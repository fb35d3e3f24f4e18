-- queen.status_v1(p_tenant, p_from, p_to, p_queue, p_namespace, p_task) -> jsonb
--
-- The status dashboard's totals over the tenant's queues matching p_queue, p_namespace and
-- p_task (each ignored when NULL): {window: {from, to}, queues, partitions, messages:
-- {total, pending, processing, completed, deadLetter}, pushed, pushedPerSecond,
-- deadLettered}. pushed and deadLettered are what happened in [p_from, p_to];
-- pushedPerSecond divides pushed by the window's length (at least one second). Sums of
-- queen.status_queue_rows_v1.
--
-- PL/pgSQL, so that the Citus layout plans it (docs/scale-out.md, "What runs, and how").
--
-- Read only: no locks. No notifications.
CREATE OR REPLACE FUNCTION queen.status_v1(
    p_tenant text, p_from timestamptz, p_to timestamptz, p_queue text, p_namespace text,
    p_task text)
RETURNS jsonb LANGUAGE plpgsql STABLE AS $$
BEGIN
    RETURN (
    SELECT jsonb_build_object(
        'window', jsonb_build_object('from', p_from, 'to', p_to),
        'queues', count(*),
        'partitions', coalesce(sum(r.partitions), 0),
        'messages', jsonb_build_object(
            'total', coalesce(sum(r.total), 0), 'pending', coalesce(sum(r.pending), 0),
            'processing', coalesce(sum(r.processing), 0),
            'completed', coalesce(sum(r.completed), 0),
            'deadLetter', coalesce(sum(r.dead_letter), 0)),
        'pushed', coalesce(sum(r.pushed), 0),
        'pushedPerSecond', round(coalesce(sum(r.pushed), 0)
                                 / greatest(extract(epoch FROM p_to - p_from), 1), 3),
        'deadLettered', coalesce(sum(r.dead_lettered), 0))
    FROM queen.status_queue_rows_v1(p_tenant, p_from, p_to, p_queue, p_namespace, p_task) r
    );
END;
$$;
