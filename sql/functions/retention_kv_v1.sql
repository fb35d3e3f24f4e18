-- queen.retention_kv_v1(p_budget) -> bigint
--
-- One bounded batch of the retention sweeper (run under queen.sweeper_lease_v1) for the
-- key/value store (sql/migrations/067_kv.sql): deletes at most p_budget rows of queen.kv
-- past their expires_at, oldest expiry first, through kv_expires_idx. Those rows are
-- already invisible to queen.kv_apply_v1; this only gives their space back. The row is
-- re-checked under its lock, so a key rewritten since it was picked is kept. Returns the
-- number deleted.
--
-- The rows are picked first, then each is locked (SKIP LOCKED), re-checked and deleted by
-- its key, tenant first: on the Citus layout (queen.kv distributed by tenant) those are
-- single-shard statements, the time in a variable; Citus refused the former single
-- DELETE (a FOR UPDATE over every shard). Same rows deleted on PostgreSQL; a batch costs two statements per row.
--
-- Locks: the deleted rows (SKIP LOCKED: a row a batch of kv ops holds waits for the next
-- sweep). No notifications.
CREATE OR REPLACE FUNCTION queen.retention_kv_v1(p_budget integer)
RETURNS bigint
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    v_removed bigint := 0;
    v_n       bigint;
    v_now     timestamptz := clock_timestamp();
    d         record;
BEGIN
    FOR d IN
        SELECT x.tenant, x.namespace, x.key FROM queen.kv x
        WHERE x.expires_at IS NOT NULL AND x.expires_at <= v_now
        ORDER BY x.expires_at
        LIMIT p_budget
    LOOP
        PERFORM 1 FROM queen.kv k
        WHERE k.tenant = d.tenant AND k.namespace = d.namespace AND k.key = d.key
        FOR UPDATE SKIP LOCKED;
        CONTINUE WHEN NOT FOUND;
        v_now := clock_timestamp();
        DELETE FROM queen.kv k
        WHERE k.tenant = d.tenant AND k.namespace = d.namespace AND k.key = d.key
          AND k.expires_at <= v_now;
        GET DIAGNOSTICS v_n = ROW_COUNT;
        v_removed := v_removed + v_n;
    END LOOP;
    RETURN v_removed;
END;
$$;
