-- queen.timers_next_due_v1() -> double precision
--
-- The fire loop's idle look (src/timers/fire.rs): milliseconds from PostgreSQL's clock to
-- the earliest due_at of any pending timer (negative when one is already due), NULL when
-- none is pending. One step down timers_due_idx; PostgreSQL's clock, so the loop's wait
-- does not depend on the broker's clock agreeing with it.
-- PL/pgSQL, not SQL, because it runs several times a second on every idle node: a SQL
-- function that is not inlined plans its body at every call (0.15-0.3 ms), PL/pgSQL keeps
-- the plan for the session (about 0.02 ms a call).
CREATE OR REPLACE FUNCTION queen.timers_next_due_v1()
RETURNS double precision
LANGUAGE plpgsql
STABLE
AS $$
BEGIN
    RETURN (SELECT extract(epoch FROM min(t.due_at) - clock_timestamp())::double precision
                   * 1000.0
              FROM queen.timers t);
END;
$$;
