-- queen.resources_grouped_v1(p_tenant text, p_by text) -> jsonb
--
-- The tenant's queues grouped by p_by, 'namespace' or 'task' (anything else is taken as
-- 'task'): {<p_by>s: [{<p_by>, queues, partitions, messages: {total, pending}}]}, by name;
-- queues without one are left out. Counts as defined in queen.partition_stats_v1. Serves
-- GET /api/v1/resources/namespaces and /tasks.
--
-- PL/pgSQL, so that the Citus layout plans it (docs/scale-out.md, "What runs, and how").
--
-- Read only: no locks. No notifications.
CREATE OR REPLACE FUNCTION queen.resources_grouped_v1(p_tenant text, p_by text)
RETURNS jsonb LANGUAGE plpgsql STABLE AS $$
BEGIN
    RETURN (
    SELECT jsonb_build_object(p_by || 's', coalesce(jsonb_agg(jsonb_build_object(
               p_by, x.name, 'queues', x.queues, 'partitions', x.partitions,
               'messages', jsonb_build_object('total', x.total, 'pending', x.pending))
               ORDER BY x.name), '[]'::jsonb))
    FROM (
        SELECT g.name, count(DISTINCT q.id) AS queues, count(s.partition_id) AS partitions,
               coalesce(sum(s.total), 0) AS total, coalesce(sum(s.pending), 0) AS pending
        FROM queen.queues q
        CROSS JOIN LATERAL (SELECT CASE WHEN p_by = 'namespace' THEN q.namespace
                                        ELSE q.task END AS name) g
        LEFT JOIN queen.partition_stats_v1(p_tenant, NULL) s ON s.queue_id = q.id
        WHERE q.tenant = p_tenant AND g.name IS NOT NULL
        GROUP BY g.name
    ) x
    );
END;
$$;
