-- queen.set_maintenance_v1(p_pop boolean) -> boolean
--
-- Turns pop maintenance mode on or off for every node: the switch is the 'maintenance' row
-- of queen.system_state, which each node re-reads at least once a second
-- (queen.get_maintenance_v1, queen.get_maintenance_v2). Returns the stored value
-- (queen.set_switch_v1 stores it).
--
-- Locks: that row, briefly (an upsert). No notifications: nodes learn it by polling.
CREATE OR REPLACE FUNCTION queen.set_maintenance_v1(p_pop boolean)
RETURNS boolean LANGUAGE sql VOLATILE AS $$
    SELECT queen.set_switch_v1('maintenance', 'pop', p_pop);
$$;
