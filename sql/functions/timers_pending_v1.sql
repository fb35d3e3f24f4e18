-- queen.timers_pending_v1() -> bigint
--
-- Pending timers of every tenant, for the queen_timers_pending gauge
-- (src/metrics/timers.rs), which the fire loop refreshes every few seconds, not per
-- fire. A count over the table.
CREATE OR REPLACE FUNCTION queen.timers_pending_v1()
RETURNS bigint
LANGUAGE sql
STABLE
AS $$
    SELECT count(*) FROM queen.timers;
$$;
