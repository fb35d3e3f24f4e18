-- 085_release_mark_has_pending_plpgsql: no schema change; marks this release's edited
-- function files, so a node of the previous release restarted during a rolling upgrade
-- leaves them alone (README, "Rolling upgrades").
--
-- Edited in place for the Citus layout, same signature: log_has_pending_v1 (PL/pgSQL; as a
-- parameterized LANGUAGE sql function Citus could not plan it, and every pop of the
-- legacy SQL candidate path answered 500 there).
-- Takes no lock; no data; no notifications.
SELECT 1;
