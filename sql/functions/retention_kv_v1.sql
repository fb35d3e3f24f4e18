-- queen.retention_kv_v1(p_budget) -> bigint
--
-- One bounded batch of the retention sweeper (run under queen.sweeper_lease_v1) for the
-- key/value store (sql/migrations/067_kv.sql): deletes at most p_budget rows of queen.kv
-- past their expires_at, oldest expiry first, through kv_expires_idx. Those rows are
-- already invisible to queen.kv_apply_v1; this only gives their space back. The row is
-- re-checked under its lock, so a key rewritten since it was picked is kept. Returns the
-- number deleted.
--
-- Locks: the deleted rows (SKIP LOCKED: a row a batch of kv ops holds waits for the next
-- sweep). No notifications.
CREATE OR REPLACE FUNCTION queen.retention_kv_v1(p_budget integer)
RETURNS bigint
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    v_removed bigint;
BEGIN
    DELETE FROM queen.kv k
     USING (SELECT x.tenant, x.namespace, x.key FROM queen.kv x
             WHERE x.expires_at IS NOT NULL AND x.expires_at <= clock_timestamp()
             ORDER BY x.expires_at
             LIMIT p_budget
             FOR UPDATE SKIP LOCKED) d
     WHERE k.tenant = d.tenant AND k.namespace = d.namespace AND k.key = d.key
       AND k.expires_at <= clock_timestamp();
    GET DIAGNOSTICS v_removed = ROW_COUNT;
    RETURN v_removed;
END;
$$;
