-- 055_push_maintenance: the push maintenance switch, beside the pop one of 013.
--
-- queen.set_push_maintenance_v1(p_push boolean) -> boolean
--   Turns push maintenance on or off for every node: while it is on, each node writes
--   pushes to its own spool instead of the database (each node re-reads the switch twice a
--   second). Returns the stored value. Locks the 'maintenance_push' row of
--   queen.system_state briefly; the pop switch's row is not touched.
-- queen.get_maintenance_v2() -> TABLE(pop boolean, push boolean)
--   Both switches (false when never set), one row. Reads only.

CREATE OR REPLACE FUNCTION queen.set_push_maintenance_v1(p_push boolean)
RETURNS boolean LANGUAGE sql VOLATILE AS $$
    INSERT INTO queen.system_state (key, value, updated_at)
    VALUES ('maintenance_push', jsonb_build_object('push', p_push), now())
    ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value, updated_at = now()
    RETURNING (value->>'push')::boolean;
$$;

CREATE OR REPLACE FUNCTION queen.get_maintenance_v2()
RETURNS TABLE (pop boolean, push boolean) LANGUAGE sql STABLE AS $$
    SELECT coalesce((SELECT (s.value->>'pop')::boolean
                     FROM queen.system_state s WHERE s.key = 'maintenance'), false),
           coalesce((SELECT (s.value->>'push')::boolean
                     FROM queen.system_state s WHERE s.key = 'maintenance_push'), false);
$$;
