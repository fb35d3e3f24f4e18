-- queen.log_pop_at_v1(p_pop, p_queue, p_pid, p_skip_window)
--   -> queen.log_pop_verdict_row rows
--
-- The hot-list pop of one candidate partition p_pid: queen.log_pop_list_v2 with the one
-- candidate, behind a function whose partition id is an argument of its own, so that on
-- the Citus layout it is delegated whole to the worker holding p_pid's shard (distributed
-- by p_pid, src/db/schema/citus.rs). There the options (reference tables), the
-- partition's row, the claim (queen.log_pop_v3) and the reads behind an empty claim's
-- verdict all run on that worker, one round trip from the broker; the list driver ran on
-- the coordinator, each of those a round trip of its own (docs/scale-out.md, "The
-- model"). The broker calls it on the layout, one candidate at a time, with the budget
-- left (p_pop.batch).
--
-- Rows: as queen.log_pop_list_v2's for one candidate: the claimed segment rows
-- (verdict = 'row'), then the candidate's one verdict row.
--
-- The group limit is not checked: delegated, this runs in a worker's session, which has
-- none of the broker's limit settings (queen.tenant_limit_v1 reads NULL there), and its
-- check takes its lock on the coordinator (queen.tenant_group_admit_v1). The broker
-- calls this only when no consumer-group limit applies to the pop (queue mode, or
-- QUEEN_TENANT_MAX_CONSUMER_GROUPS unset), else queen.log_pop_list_v2.
-- Locks: as queen.log_pop_v3 for the claim. No notifications.
CREATE OR REPLACE FUNCTION queen.log_pop_at_v1(
    p_pop         queen.log_pop_args,
    p_queue       text,
    p_pid         bigint,
    p_skip_window boolean
) RETURNS SETOF queen.log_pop_verdict_row LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    RETURN QUERY
        SELECT l.verdict, l.retry_at, l.pending_after, l.slice
        FROM queen.log_pop_list_v2(p_pop, p_queue, ARRAY[p_pid], p_skip_window) l;
END;
$$;
