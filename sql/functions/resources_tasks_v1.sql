-- queen.resources_tasks_v1(p_tenant) -> jsonb
--
-- The tenant's tasks: {tasks: [{task, queues, partitions, messages: {total, pending}}]},
-- by task name; queues without a task are left out. The counterpart of
-- queen.resources_namespaces_v1 by task.
--
-- queen.resources_grouped_v1 computes it.
--
-- PL/pgSQL, so that the Citus layout plans it (docs/scale-out.md, "What runs, and how").
--
-- Read only: no locks. No notifications.
CREATE OR REPLACE FUNCTION queen.resources_tasks_v1(p_tenant text)
RETURNS jsonb LANGUAGE plpgsql STABLE AS $$
BEGIN
    RETURN (
    SELECT queen.resources_grouped_v1(p_tenant, 'task')
    );
END;
$$;
