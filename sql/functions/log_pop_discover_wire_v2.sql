-- queen.log_pop_discover_wire_v2(p_pop, p_namespace, p_task) -> SETOF queen.log_pop_wire_row
--
-- Pops across every queue of the tenant matching a namespace and/or a task. NULL
-- p_namespace / p_task match anything (the broker refuses both NULL). Matching queues are
-- tried in descending priority, ties in random order so none starves, each through
-- queen.log_pop_wildcard_bin_v2 with the same pop (queen.log_pop_args); the first queue
-- that yields messages answers, so one answer always comes from one queue (the framed
-- answer has a single queue field).
--
-- Rows and locks: as queen.log_pop_wildcard_bin_v2 for the queue that answered.
-- No notifications.
CREATE OR REPLACE FUNCTION queen.log_pop_discover_wire_v2(
    p_pop       queen.log_pop_args,
    p_namespace text,
    p_task      text
) RETURNS SETOF queen.log_pop_wire_row LANGUAGE plpgsql VOLATILE AS $$
#variable_conflict use_column
DECLARE
    v_queue record;
    v_count bigint;
BEGIN
    FOR v_queue IN
        SELECT q.name
        FROM queen.queues q
        WHERE q.tenant = p_pop.tenant
          AND (p_namespace IS NULL OR q.namespace = p_namespace)
          AND (p_task IS NULL OR q.task = p_task)
        ORDER BY q.priority DESC, random()
    LOOP
        RETURN QUERY SELECT * FROM queen.log_pop_wildcard_bin_v2(p_pop, v_queue.name);
        GET DIAGNOSTICS v_count = ROW_COUNT;
        EXIT WHEN v_count > 0;
    END LOOP;
END;
$$;
