-- queen.resources_queues_v1(p_tenant, p_search, p_limit, p_offset) -> jsonb
--
-- The tenant's queues, by name and paged by p_limit/p_offset: {queues: [{id, name,
-- namespace, task, priority, createdAt, partitions, messages: {total, pending,
-- processing}}], total}, total counting every match. p_search (NULL: all) matches a
-- substring of the name, case-insensitive. Counts as defined in queen.partition_stats_v1,
-- computed for the page's queues only.
--
-- PL/pgSQL, so that the Citus layout plans it (docs/scale-out.md, "What runs, and how").
--
-- Read only: no locks. No notifications.
CREATE OR REPLACE FUNCTION queen.resources_queues_v1(
    p_tenant text, p_search text, p_limit integer, p_offset integer)
RETURNS jsonb LANGUAGE plpgsql STABLE AS $$
BEGIN
    RETURN (
    WITH matching AS (
        SELECT q.* FROM queen.queues q
        WHERE q.tenant = p_tenant
          AND (p_search IS NULL OR strpos(lower(q.name), lower(p_search)) > 0)
    ), page AS (
        SELECT m.* FROM matching m ORDER BY m.name LIMIT p_limit OFFSET p_offset
    ), stats AS (
        SELECT s.queue_id, count(*) AS partitions, sum(s.total) AS total,
               sum(s.pending) AS pending, sum(s.processing) AS processing
        FROM queen.partition_stats_v1(p_tenant, NULL) s
        WHERE s.queue_id IN (SELECT id FROM page)
        GROUP BY s.queue_id
    )
    SELECT jsonb_build_object(
        'queues', coalesce(jsonb_agg(jsonb_build_object(
            'id', p.id::text, 'name', p.name, 'namespace', p.namespace, 'task', p.task,
            'priority', p.priority, 'createdAt', p.created_at,
            'partitions', coalesce(st.partitions, 0),
            'messages', jsonb_build_object(
                'total', coalesce(st.total, 0),
                'pending', coalesce(st.pending, 0),
                'processing', coalesce(st.processing, 0)))
            ORDER BY p.name), '[]'::jsonb),
        'total', (SELECT count(*) FROM matching))
    FROM page p LEFT JOIN stats st ON st.queue_id = p.id
    );
END;
$$;
