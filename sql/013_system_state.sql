-- 013_system_state: cluster-wide switches shared through the database.
--
-- queen.set_maintenance_v1(p_pop boolean) -> boolean
--   Turns pop maintenance mode on or off for every node (each node re-reads it at least
--   once a second). Returns the stored value. Locks the system_state row briefly.
-- queen.get_maintenance_v1() -> boolean
--   The current pop maintenance switch (false when never set). Reads only.

CREATE OR REPLACE FUNCTION queen.set_maintenance_v1(p_pop boolean)
RETURNS boolean LANGUAGE sql VOLATILE AS $$
    INSERT INTO queen.system_state (key, value, updated_at)
    VALUES ('maintenance', jsonb_build_object('pop', p_pop), now())
    ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value, updated_at = now()
    RETURNING (value->>'pop')::boolean;
$$;

CREATE OR REPLACE FUNCTION queen.get_maintenance_v1()
RETURNS boolean LANGUAGE sql STABLE AS $$
    SELECT coalesce((SELECT (s.value->>'pop')::boolean
                     FROM queen.system_state s WHERE s.key = 'maintenance'), false);
$$;
