-- 066_group_last_seen: when a consumer group last asked for messages, so the idle-group
-- sweep (queen.retention_idle_v1, QUEEN_IDLE_GROUP_SECS) does not forget a group that is
-- long-polling an empty queue.
--
-- Written by queen.consumer_group_seen_v1 at most once per interval per group and node,
-- from a pop that found nothing (src/log/pop.rs), never per pop. NULL: not seen waiting
-- since this column exists (the sweep then looks at the cursors only, as before).
-- Adding a nullable column without a default rewrites nothing; takes the table's ACCESS
-- EXCLUSIVE lock for the catalog change only. No notifications.

ALTER TABLE queen.consumer_groups_metadata
    ADD COLUMN IF NOT EXISTS last_seen_at timestamptz;
