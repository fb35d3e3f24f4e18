-- queen.log_push_at_v1(p_pid, p_window, p_known_last, p_counts, p_codecs, p_blobs,
--                      p_keys_hi, p_keys_lo, p_producer)
--   -> queen.log_push_answer_row rows
--
-- The append of queen.log_push_v3 for a partition already found by id (p_pid, from
-- queen.log_partition_resolve_v1) with its queue's dedup window p_window: the push on the
-- Citus layout, where this function is distributed by p_pid with force_delegation
-- (src/db/schema/citus.rs), so the whole append is one call on the worker that holds the
-- partition's shards, inside the broker's transactions too. It reads and writes only the
-- partition's rows of queen.log_partitions (its counters) and queen.log_segments.
--
-- Same answers as queen.log_push_v3 without the maxSize check (the caller did it with
-- resolve's stored count): when the partition's last_offset is p_known_last (or the
-- partition is empty, or p_window is 0) it appends one segment per element of
-- p_counts/p_codecs/p_blobs at consecutive offsets, with its slice of the keys, created_at
-- never before the previous segment's, bumps last_offset/last_write_at and answers one
-- row: stale = false, p_pid, the last offset BEFORE the append, p_window. Otherwise it
-- writes NOTHING and answers stale = true, the partition's last offset, p_window, then one
-- row per segment above p_known_last created within the window, newest first, as
-- queen.log_push_v3 lists them.
--
-- Bad input (arrays of unequal length, a count below 1, not one key per message) raises
-- SQLSTATE 22023; a partition that no longer exists (deleted since resolve) raises
-- 40001, a retryable conflict.
-- Locks: the partition's queen.log_partitions row FOR NO KEY UPDATE, held to the caller's
-- COMMIT, as queen.log_push_v3 does. No notifications.
CREATE OR REPLACE FUNCTION queen.log_push_at_v1(
    p_pid            bigint,
    p_window         integer,
    p_known_last     bigint,
    p_counts         integer[],
    p_codecs         smallint[],
    p_blobs          bytea[],
    p_keys_hi        integer[],
    p_keys_lo        smallint[],
    p_producer       text
) RETURNS SETOF queen.log_push_answer_row LANGUAGE plpgsql VOLATILE AS $$
#variable_conflict use_column
DECLARE
    v_last    bigint;
    v_n       integer := coalesce(cardinality(p_counts), 0);
    v_total   integer := 0;
    v_before  integer := 0;
    v_now     timestamptz := clock_timestamp();
    v_created timestamptz;
    v_prev_at timestamptz;
    v_cnt     integer;
    i         integer;
    r         record;
    a         queen.log_push_answer_row;
BEGIN
    IF v_n > 0 THEN
        FOR i IN 1 .. v_n LOOP
            v_cnt := p_counts[i];
            IF v_cnt IS NULL OR v_cnt < 1 THEN
                v_total := NULL;
                EXIT;
            END IF;
            v_total := v_total + v_cnt;
        END LOOP;
    END IF;
    IF v_n = 0 OR v_n <> coalesce(cardinality(p_codecs), 0)
       OR v_n <> coalesce(cardinality(p_blobs), 0)
       OR v_total IS NULL
       OR v_total IS DISTINCT FROM cardinality(p_keys_hi)
       OR v_total IS DISTINCT FROM cardinality(p_keys_lo) THEN
        RAISE EXCEPTION 'log_push_at_v1: counts, codecs and blobs must be non-empty and equal, keys one per message'
            USING ERRCODE = '22023';
    END IF;

    SELECT p.last_offset INTO v_last
    FROM queen.log_partitions p WHERE p.id = p_pid
    FOR NO KEY UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'log_push_at_v1: partition % no longer exists', p_pid
            USING ERRCODE = '40001';
    END IF;

    IF p_window > 0 AND v_last >= 0 AND v_last IS DISTINCT FROM p_known_last THEN
        a.stale := true; a.partition_id := p_pid; a.last_offset := v_last;
        a.window_seconds := p_window;
        RETURN NEXT a;
        -- created_at grows with base_offset: walk back from the newest, stop at the window.
        FOR r IN
            SELECT s.base_offset, s.end_offset, s.created_at, s.codec, s.blob, s.txn_hashes,
                   s.txn_keys_hi, s.txn_keys_lo
            FROM queen.log_segments s
            WHERE s.partition_id = p_pid
              AND s.base_offset > CASE WHEN p_known_last <= v_last THEN p_known_last ELSE -1 END
            ORDER BY s.base_offset DESC
        LOOP
            EXIT WHEN r.created_at < v_now - make_interval(secs => p_window);
            a.seg_base := r.base_offset;
            a.seg_end := r.end_offset;
            a.seg_age_ms := (extract(epoch FROM (v_now - r.created_at)) * 1000)::bigint;
            a.seg_keys_hi := r.txn_keys_hi;
            a.seg_keys_lo := r.txn_keys_lo;
            a.seg_hashes := r.txn_hashes;
            a.seg_codec := CASE WHEN r.txn_keys_hi IS NULL AND r.txn_hashes IS NULL THEN r.codec END;
            a.seg_blob := CASE WHEN r.txn_keys_hi IS NULL AND r.txn_hashes IS NULL THEN r.blob END;
            RETURN NEXT a;
        END LOOP;
        RETURN;
    END IF;

    -- created_at never goes backwards within a partition (see queen.log_push_v3).
    SELECT s.created_at INTO v_prev_at
    FROM queen.log_segments s
    WHERE s.partition_id = p_pid
    ORDER BY s.base_offset DESC
    LIMIT 1;
    v_created := GREATEST(v_now, v_prev_at);

    -- One INSERT .. VALUES per segment: each routes to the partition's shard, here.
    FOR i IN 1 .. v_n LOOP
        v_cnt := p_counts[i];
        INSERT INTO queen.log_segments
            (partition_id, base_offset, end_offset, msg_count, created_at, codec, producer,
             blob, txn_keys_hi, txn_keys_lo)
        VALUES (p_pid, v_last + 1 + v_before, v_last + v_before + v_cnt, v_cnt, v_created,
                p_codecs[i], p_producer, p_blobs[i],
                p_keys_hi[v_before + 1 : v_before + v_cnt],
                p_keys_lo[v_before + 1 : v_before + v_cnt]);
        v_before := v_before + v_cnt;
    END LOOP;

    UPDATE queen.log_partitions p
    SET last_offset = v_last + v_total,
        last_write_at = date_trunc('second', v_created)
    WHERE p.id = p_pid;

    a.stale := false; a.partition_id := p_pid; a.last_offset := v_last;
    a.window_seconds := p_window;
    RETURN NEXT a;
END;
$$;
