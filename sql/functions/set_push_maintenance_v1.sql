-- queen.set_push_maintenance_v1(p_push boolean) -> boolean
--
-- Turns push maintenance on or off for every node: while it is on, each node writes pushes
-- to its own spool instead of the database. The switch is the 'maintenance_push' row of
-- queen.system_state, which each node re-reads twice a second (queen.get_maintenance_v2);
-- the pop switch's row is not touched. Returns the stored value
-- (queen.set_switch_v1 stores it).
--
-- Locks: the 'maintenance_push' row, briefly (an upsert). No notifications: nodes learn it
-- by polling.
CREATE OR REPLACE FUNCTION queen.set_push_maintenance_v1(p_push boolean)
RETURNS boolean LANGUAGE sql VOLATILE AS $$
    SELECT queen.set_switch_v1('maintenance_push', 'push', p_push);
$$;
