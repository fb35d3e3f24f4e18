-- queen.get_maintenance_v2() -> TABLE (pop boolean, push boolean), one row
--
-- Both maintenance switches in one call: pop (key 'maintenance', set by
-- queen.set_maintenance_v1) and push (key 'maintenance_push', set by
-- queen.set_push_maintenance_v1) of queen.system_state, each false when never set.
--
-- Read only: no locks. No notifications.
CREATE OR REPLACE FUNCTION queen.get_maintenance_v2()
RETURNS TABLE (pop boolean, push boolean) LANGUAGE sql STABLE AS $$
    SELECT coalesce((SELECT (s.value->>'pop')::boolean
                     FROM queen.system_state s WHERE s.key = 'maintenance'), false),
           coalesce((SELECT (s.value->>'push')::boolean
                     FROM queen.system_state s WHERE s.key = 'maintenance_push'), false);
$$;
