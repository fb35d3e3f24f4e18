-- queen.resources_namespaces_v1(p_tenant) -> jsonb
--
-- The tenant's namespaces: {namespaces: [{namespace, queues, partitions, messages: {total,
-- pending}}]}, by namespace name; queues without a namespace are left out. Counts as
-- defined in queen.partition_stats_v1; queen.resources_tasks_v1 is the same view by task.
--
-- Read only: no locks. No notifications.
CREATE OR REPLACE FUNCTION queen.resources_namespaces_v1(p_tenant text)
RETURNS jsonb LANGUAGE sql STABLE AS $$
    SELECT jsonb_build_object('namespaces', coalesce(jsonb_agg(jsonb_build_object(
               'namespace', x.namespace, 'queues', x.queues, 'partitions', x.partitions,
               'messages', jsonb_build_object('total', x.total, 'pending', x.pending))
               ORDER BY x.namespace), '[]'::jsonb))
    FROM (
        SELECT q.namespace, count(DISTINCT q.id) AS queues, count(s.partition_id) AS partitions,
               coalesce(sum(s.total), 0) AS total, coalesce(sum(s.pending), 0) AS pending
        FROM queen.queues q
        LEFT JOIN queen.partition_stats_v1(p_tenant, NULL) s ON s.queue_id = q.id
        WHERE q.tenant = p_tenant AND q.namespace IS NOT NULL
        GROUP BY q.namespace
    ) x;
$$;
