-- queen.resources_tasks_v1(p_tenant) -> jsonb
--
-- The tenant's tasks: {tasks: [{task, queues, partitions, messages: {total, pending}}]},
-- by task name; queues without a task are left out. The counterpart of
-- queen.resources_namespaces_v1 by task.
--
-- Read only: no locks. No notifications.
CREATE OR REPLACE FUNCTION queen.resources_tasks_v1(p_tenant text)
RETURNS jsonb LANGUAGE sql STABLE AS $$
    SELECT jsonb_build_object('tasks', coalesce(jsonb_agg(jsonb_build_object(
               'task', x.task, 'queues', x.queues, 'partitions', x.partitions,
               'messages', jsonb_build_object('total', x.total, 'pending', x.pending))
               ORDER BY x.task), '[]'::jsonb))
    FROM (
        SELECT q.task, count(DISTINCT q.id) AS queues, count(s.partition_id) AS partitions,
               coalesce(sum(s.total), 0) AS total, coalesce(sum(s.pending), 0) AS pending
        FROM queen.queues q
        LEFT JOIN queen.partition_stats_v1(p_tenant, NULL) s ON s.queue_id = q.id
        WHERE q.tenant = p_tenant AND q.task IS NOT NULL
        GROUP BY q.task
    ) x;
$$;
