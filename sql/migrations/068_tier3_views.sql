-- 068_tier3_views: marks the release that adds the function files
-- sql/functions/resources_kv_v1.sql and resources_kv_keys_v1.sql (the KV listings) and
-- sql/functions/locks_apply_v1.sql (POST /api/v1/locks, permits stored as queen.kv rows).
--
-- No schema change: a release that adds or edits function files records them at a newer
-- migration level, so an older node restarting during a rolling upgrade leaves them alone
-- (src/db/schema/functions.rs). No locks, no data, no notifications.

SELECT 1;
