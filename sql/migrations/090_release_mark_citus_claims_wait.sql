-- 090_release_mark_citus_claims_wait: no schema change; marks this release's edited
-- function file, so a node of the previous release restarted during a rolling upgrade
-- leaves it alone (README, "Rolling upgrades").
--
-- Edited in place, same signature: log_pop_v3 (a leased claim on a Citus node waits for
-- its WAL flush, since a shard move loses an asynchronous commit of its last moments; the
-- setting is now made before the claim's UPDATE; a lease naming its partition leaves
-- shared_lease as it is, so the claim's update of the cursor row can be HOT).
-- Takes no lock; no data; no notifications.
SELECT 1;
