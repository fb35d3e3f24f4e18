-- 088_release_mark_maintenance_plpgsql: no schema change; marks this release's edited
-- function files, so a node of the previous release restarted during a rolling upgrade
-- leaves them alone (README, "Rolling upgrades").
--
-- Edited in place for the Citus layout, same signature: get_maintenance_v2 (PL/pgSQL; as
-- a LANGUAGE sql function it was inlined into its caller's query, and Citus then read the
-- coordinator's empty shell of system_state: both maintenance switches read false there,
-- and every node turned them off again within half a second).
-- Takes no lock; no data; no notifications.
SELECT 1;
