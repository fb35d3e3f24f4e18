-- queen.sweeper_release_v1(p_holder) -> void
--
-- A stopping node hands the retention sweeper lease over at once: when p_holder holds it,
-- its expiry becomes -infinity, so the next node's queen.sweeper_lease_v1 takes it without
-- waiting for it to run out. Does nothing when another node holds it.
--
-- Locks: the sweeper_lease row, briefly. No notifications.
CREATE OR REPLACE FUNCTION queen.sweeper_release_v1(p_holder text)
RETURNS void LANGUAGE sql VOLATILE AS $$
    UPDATE queen.sweeper_lease SET expires_at = '-infinity' WHERE holder = p_holder;
$$;
