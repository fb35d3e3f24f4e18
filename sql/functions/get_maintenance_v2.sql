-- queen.get_maintenance_v2() -> TABLE (pop boolean, push boolean), one row
--
-- Both maintenance switches in one call: pop (key 'maintenance', set by
-- queen.set_maintenance_v1) and push (key 'maintenance_push', set by
-- queen.set_push_maintenance_v1) of queen.system_state, each false when never set.
--
-- PL/pgSQL: as a LANGUAGE sql function PostgreSQL inlined it into the caller's
-- `SELECT .. FROM queen.get_maintenance_v2()`, where Citus saw no distributed or reference
-- table (the table was only inside scalar subqueries) and let the coordinator read its own
-- empty shell of system_state: on the Citus layout both switches always read false, and
-- each node's refresher turned off within half a second the maintenance just switched on
-- (docs/scale-out.md, part eight). A PL/pgSQL body is never inlined; Citus plans each of
-- its statements.
--
-- Read only: no locks. No notifications.
CREATE OR REPLACE FUNCTION queen.get_maintenance_v2()
RETURNS TABLE (pop boolean, push boolean) LANGUAGE plpgsql STABLE AS $$
BEGIN
    pop := coalesce((SELECT (s.value->>'pop')::boolean
                     FROM queen.system_state s WHERE s.key = 'maintenance'), false);
    push := coalesce((SELECT (s.value->>'push')::boolean
                      FROM queen.system_state s WHERE s.key = 'maintenance_push'), false);
    RETURN NEXT;
END;
$$;
