-- queen.resource_queue_v1(p_tenant, p_queue) -> jsonb, or NULL for an unknown queue
--
-- One queue's resources document: {id, name, namespace, task, createdAt, config,
-- partitions: [{id, name, createdAt, stats: {total, pending, processing, completed,
-- failed, deadLetter}, oldestMessage, newestMessage}], totals: {the six counts summed}}.
-- config is the queue row without its identity columns. `failed` repeats deadLetter: this
-- broker has no other failure state. Counts as defined in queen.partition_stats_v1.
--
-- PL/pgSQL, so that the Citus layout plans it (docs/scale-out.md, "What runs, and how").
--
-- Read only: no locks. No notifications.
CREATE OR REPLACE FUNCTION queen.resource_queue_v1(p_tenant text, p_queue text)
RETURNS jsonb LANGUAGE plpgsql STABLE AS $$
BEGIN
    RETURN (
    SELECT jsonb_build_object(
        'id', q.id::text, 'name', q.name, 'namespace', q.namespace, 'task', q.task,
        'createdAt', q.created_at,
        'config', to_jsonb(q) - 'id' - 'tenant' - 'name' - 'namespace' - 'task' - 'created_at',
        'partitions', coalesce((
            SELECT jsonb_agg(jsonb_build_object(
                'id', s.partition_id::text, 'name', s.partition_name,
                'createdAt', s.created_at,
                'stats', jsonb_build_object(
                    'total', s.total, 'pending', s.pending, 'processing', s.processing,
                    'completed', s.completed, 'failed', s.dead_letter,
                    'deadLetter', s.dead_letter),
                'oldestMessage', s.oldest, 'newestMessage', s.newest)
                ORDER BY s.partition_name)
            FROM queen.partition_stats_v1(p_tenant, p_queue) s), '[]'::jsonb),
        'totals', (
            SELECT jsonb_build_object(
                'total', coalesce(sum(s.total), 0), 'pending', coalesce(sum(s.pending), 0),
                'processing', coalesce(sum(s.processing), 0),
                'completed', coalesce(sum(s.completed), 0),
                'failed', coalesce(sum(s.dead_letter), 0),
                'deadLetter', coalesce(sum(s.dead_letter), 0))
            FROM queen.partition_stats_v1(p_tenant, p_queue) s))
    FROM queen.queues q
    WHERE q.tenant = p_tenant AND q.name = p_queue
    );
END;
$$;
