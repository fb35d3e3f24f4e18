-- 089_release_mark_idle_sweep_directory: no schema change; marks this release's edited
-- function files, so a node of the previous release restarted during a rolling upgrade
-- leaves them alone (README, "Rolling upgrades").
--
-- Edited in place, same signature: retention_idle_v1 (a removed empty partition goes with
-- its directory row, which it had left behind; on the Citus layout, which refused its
-- scan, one partition or group per statement) and consumer_group_seen_v1 (PL/pgSQL: its
-- LANGUAGE sql body failed on the Citus layout, so waiting groups were never seen there).
-- Takes no lock; no data; no notifications.
SELECT 1;
