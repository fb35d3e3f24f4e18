-- queen.get_maintenance_v1() -> boolean
--
-- The pop maintenance switch that queen.set_maintenance_v1 stores in queen.system_state
-- (key 'maintenance'); false when it was never set. Every node polls it.
--
-- Read only: no locks. No notifications.
CREATE OR REPLACE FUNCTION queen.get_maintenance_v1()
RETURNS boolean LANGUAGE sql STABLE AS $$
    SELECT coalesce((SELECT (s.value->>'pop')::boolean
                     FROM queen.system_state s WHERE s.key = 'maintenance'), false);
$$;
