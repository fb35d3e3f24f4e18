-- queen.set_maintenance_v1(p_pop boolean) -> boolean
--
-- Turns pop maintenance mode on or off for every node: the switch is the 'maintenance' row
-- of queen.system_state, which each node re-reads at least once a second
-- (queen.get_maintenance_v1, queen.get_maintenance_v2). Returns the stored value.
--
-- Locks: that row, briefly (an upsert). No notifications: nodes learn it by polling.
CREATE OR REPLACE FUNCTION queen.set_maintenance_v1(p_pop boolean)
RETURNS boolean LANGUAGE sql VOLATILE AS $$
    INSERT INTO queen.system_state (key, value, updated_at)
    VALUES ('maintenance', jsonb_build_object('pop', p_pop), now())
    ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value, updated_at = now()
    RETURNING (value->>'pop')::boolean;
$$;
