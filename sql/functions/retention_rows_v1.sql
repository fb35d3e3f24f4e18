-- queen.retention_rows_v1(p_budget, p_dead_letter_secs, p_trace_secs)
--   -> (dead_letters, traces), one row
--
-- One bounded batch of the retention sweeper (run under queen.sweeper_lease_v1) for rows
-- that grow without bound besides segments: deletes at most p_budget dead letters failed
-- longer than p_dead_letter_secs ago, oldest first, and at most p_budget traces recorded
-- longer than p_trace_secs ago (their names cascade). 0 keeps them forever. Returns the
-- numbers deleted.
--
-- Locks: the deleted rows. No notifications.
CREATE OR REPLACE FUNCTION queen.retention_rows_v1(
    p_budget           integer,
    p_dead_letter_secs integer,
    p_trace_secs       integer
) RETURNS TABLE (dead_letters bigint, traces bigint)
LANGUAGE plpgsql VOLATILE AS $$
#variable_conflict use_column
DECLARE
    -- The cut-offs before the deletes: Citus takes no STABLE function over a column in
    -- a write to a distributed table.
    v_now timestamptz := clock_timestamp();
BEGIN
    dead_letters := 0;
    traces := 0;
    IF p_dead_letter_secs > 0 THEN
        DELETE FROM queen.dead_letters d WHERE d.id IN (
            SELECT x.id FROM queen.dead_letters x
            WHERE x.failed_at < v_now - make_interval(secs => p_dead_letter_secs)
            ORDER BY x.failed_at LIMIT p_budget);
        GET DIAGNOSTICS dead_letters = ROW_COUNT;
    END IF;
    IF p_trace_secs > 0 THEN
        DELETE FROM queen.message_traces t WHERE t.id IN (
            SELECT x.id FROM queen.message_traces x
            WHERE x.created_at < v_now - make_interval(secs => p_trace_secs)
            ORDER BY x.created_at LIMIT p_budget);
        GET DIAGNOSTICS traces = ROW_COUNT;
    END IF;
    RETURN NEXT;
END;
$$;
