-- queen.sweeper_lease_v1(p_holder, p_lease_ms) -> boolean
--
-- Takes or renews the single cluster-wide retention sweeper lease (the one row of
-- queen.sweeper_lease) for p_lease_ms when it is free, expired, or already p_holder's;
-- true when p_holder holds it now. A dead holder's lease expires and the next node takes
-- it; a stopping holder hands it over with queen.sweeper_release_v1.
--
-- The time is read once into a variable: on the Citus layout sweeper_lease is a reference
-- table, whose upsert takes no function that is not IMMUTABLE in its clauses.
--
-- Locks: the row stays locked to the caller's COMMIT, so a batch run in the same
-- transaction (queen.retention_segments_v2, queen.retention_rows_v1,
-- queen.retention_idle_v1, queen.retention_kv_v1) can never overlap another node's: the
-- other node waits for the commit, then sees a live lease that is not its own. No
-- notifications.
CREATE OR REPLACE FUNCTION queen.sweeper_lease_v1(p_holder text, p_lease_ms integer)
RETURNS boolean LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    v_holder text;
    v_now    timestamptz := clock_timestamp();
BEGIN
    INSERT INTO queen.sweeper_lease AS l (id, holder, expires_at)
    VALUES (1, p_holder, v_now + make_interval(secs => p_lease_ms / 1000.0))
    ON CONFLICT (id) DO UPDATE SET holder = EXCLUDED.holder, expires_at = EXCLUDED.expires_at
        WHERE l.holder = EXCLUDED.holder OR l.expires_at < v_now
    RETURNING l.holder INTO v_holder;
    RETURN v_holder IS NOT NULL;
END;
$$;
