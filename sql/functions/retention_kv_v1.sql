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
--
-- Shape: the expired keys are picked first (no lock), then each one is locked and deleted
-- by its key, one statement each, the time read into a variable before. On the Citus
-- layout queen.kv is distributed by tenant, and Citus refuses a FOR UPDATE over several
-- shards and a VOLATILE function in a DELETE; a statement naming the tenant runs on its
-- shard. On PostgreSQL a batch costs two statements per expired row (off the hot path).
CREATE OR REPLACE FUNCTION queen.retention_kv_v1(p_budget integer)
RETURNS bigint
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    v_now     timestamptz := clock_timestamp();
    v_removed bigint := 0;
    v_n       bigint;
    r         record;
BEGIN
    FOR r IN
        SELECT x.tenant, x.namespace, x.key FROM queen.kv x
         WHERE x.expires_at IS NOT NULL AND x.expires_at <= v_now
         ORDER BY x.expires_at
         LIMIT p_budget
    LOOP
        PERFORM 1 FROM queen.kv k
         WHERE k.tenant = r.tenant AND k.namespace = r.namespace AND k.key = r.key
           AND k.expires_at <= v_now
           FOR UPDATE SKIP LOCKED;
        CONTINUE WHEN NOT FOUND;
        DELETE FROM queen.kv k
         WHERE k.tenant = r.tenant AND k.namespace = r.namespace AND k.key = r.key
           AND k.expires_at <= v_now;
        GET DIAGNOSTICS v_n = ROW_COUNT;
        v_removed := v_removed + v_n;
    END LOOP;
    RETURN v_removed;
END;
$$;
