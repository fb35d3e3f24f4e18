-- queen.resources_namespaces_v1(p_tenant) -> jsonb
--
-- The tenant's namespaces: {namespaces: [{namespace, queues, partitions, messages: {total,
-- pending}}]}, by namespace name; queues without a namespace are left out. Counts as
-- defined in queen.partition_stats_v1; queen.resources_tasks_v1 is the same view by task.
--
-- queen.resources_grouped_v1 computes it.
--
-- PL/pgSQL, so that the Citus layout plans it (docs/scale-out.md, "What runs, and how").
--
-- Read only: no locks. No notifications.
CREATE OR REPLACE FUNCTION queen.resources_namespaces_v1(p_tenant text)
RETURNS jsonb LANGUAGE plpgsql STABLE AS $$
BEGIN
    RETURN (
    SELECT queen.resources_grouped_v1(p_tenant, 'namespace')
    );
END;
$$;
