-- queen.log_push_v2(p_tenant, p_queue, p_partition, p_known_last, p_default_window,
--                   p_counts, p_codecs, p_blobs, p_hashes, p_producer)
--   -> (stale, partition_id, last_offset, window_seconds, seg_base, seg_end, seg_age_ms,
--       seg_hashes, seg_codec, seg_blob) rows
--
-- The append of brokers of the previous release, kept for them during a rolling upgrade;
-- this release's broker calls queen.log_push_v3. It is queen.log_push_v3 with 64-bit
-- hashes instead of keys: p_hashes holds queen.txn_hash of every message in order, and
-- each new segment stores its slice in txn_hashes. A stale answer lists, per segment, its
-- txn_hashes, or its codec and blob when it has none, which includes every segment this
-- release writes (it stores keys): the old broker reads the ids from the frames.
--
-- Everything else, the locks, the dedup window, maxSize and the answers included, is as
-- in queen.log_push_v3. No notifications.
CREATE OR REPLACE FUNCTION queen.log_push_v2(
    p_tenant         text,
    p_queue          text,
    p_partition      text,
    p_known_last     bigint,
    p_default_window integer,
    p_counts         integer[],
    p_codecs         smallint[],
    p_blobs          bytea[],
    p_hashes         bigint[],
    p_producer       text
) RETURNS TABLE (
    stale          boolean,
    partition_id   bigint,
    last_offset    bigint,
    window_seconds integer,
    seg_base       bigint,
    seg_end        bigint,
    seg_age_ms     bigint,
    seg_hashes     bigint[],
    seg_codec      smallint,
    seg_blob       bytea
) LANGUAGE plpgsql VOLATILE AS $$
#variable_conflict use_column
DECLARE
    v_qid     bigint;
    v_window  integer;
    v_pid     bigint;
    v_last    bigint;
    v_n       integer := coalesce(cardinality(p_counts), 0);
    v_total   integer;
    v_now     timestamptz := clock_timestamp();
    v_created timestamptz;
    v_prev_at timestamptz;
    v_max     integer;
    v_size    bigint;
    r         record;
BEGIN
    SELECT sum(c) INTO v_total FROM unnest(p_counts) AS c;
    IF v_n = 0 OR v_n <> coalesce(cardinality(p_codecs), 0)
       OR v_n <> coalesce(cardinality(p_blobs), 0)
       OR v_total IS DISTINCT FROM cardinality(p_hashes)
       OR EXISTS (SELECT 1 FROM unnest(p_counts) AS c WHERE c IS NULL OR c < 1) THEN
        RAISE EXCEPTION 'log_push_v2: counts, codecs and blobs must be non-empty and equal, hashes one per message'
            USING ERRCODE = '22023';
    END IF;

    SELECT q.id, coalesce(q.dedup_window_seconds, p_default_window)
    INTO v_qid, v_window
    FROM queen.queues q WHERE q.tenant = p_tenant AND q.name = p_queue;
    IF v_qid IS NULL THEN
        INSERT INTO queen.queues (tenant, name) VALUES (p_tenant, p_queue)
        ON CONFLICT (tenant, name) DO NOTHING;
        SELECT q.id, coalesce(q.dedup_window_seconds, p_default_window)
        INTO v_qid, v_window
        FROM queen.queues q WHERE q.tenant = p_tenant AND q.name = p_queue;
    END IF;
    SELECT q.max_size INTO v_max FROM queen.queues q WHERE q.id = v_qid;
    IF v_max > 0 THEN
        PERFORM pg_advisory_xact_lock(hashtextextended('queen.max_size/' || v_qid, 0));
    END IF;

    SELECT p.id, p.last_offset INTO v_pid, v_last
    FROM queen.log_partitions p
    WHERE p.queue_id = v_qid AND p.name = p_partition
    FOR NO KEY UPDATE;
    IF v_pid IS NULL THEN
        INSERT INTO queen.log_partitions (queue_id, name) VALUES (v_qid, p_partition)
        ON CONFLICT (queue_id, name) DO NOTHING;
        SELECT p.id, p.last_offset INTO v_pid, v_last
        FROM queen.log_partitions p
        WHERE p.queue_id = v_qid AND p.name = p_partition
        FOR NO KEY UPDATE;
    END IF;

    IF v_window > 0 AND v_last >= 0 AND v_last IS DISTINCT FROM p_known_last THEN
        stale := true; partition_id := v_pid; last_offset := v_last;
        window_seconds := v_window;
        RETURN NEXT;
        -- created_at grows with base_offset: walk back from the newest, stop at the window.
        FOR r IN
            SELECT s.base_offset, s.end_offset, s.created_at, s.txn_hashes, s.codec, s.blob
            FROM queen.log_segments s
            WHERE s.partition_id = v_pid
              AND s.base_offset > CASE WHEN p_known_last <= v_last THEN p_known_last ELSE -1 END
            ORDER BY s.base_offset DESC
        LOOP
            EXIT WHEN r.created_at < v_now - make_interval(secs => v_window);
            seg_base := r.base_offset;
            seg_end := r.end_offset;
            seg_age_ms := (extract(epoch FROM (v_now - r.created_at)) * 1000)::bigint;
            seg_hashes := r.txn_hashes;
            seg_codec := CASE WHEN r.txn_hashes IS NULL THEN r.codec END;
            seg_blob := CASE WHEN r.txn_hashes IS NULL THEN r.blob END;
            RETURN NEXT;
        END LOOP;
        RETURN;
    END IF;

    IF v_max > 0 THEN
        SELECT coalesce(sum(p.last_offset + 1 - coalesce(
                   (SELECT s.base_offset FROM queen.log_segments s
                    WHERE s.partition_id = p.id ORDER BY s.base_offset LIMIT 1),
                   p.last_offset + 1)), 0)
        INTO v_size
        FROM queen.log_partitions p WHERE p.queue_id = v_qid;
        IF v_size + v_total > v_max THEN
            stale := NULL; partition_id := v_pid; last_offset := v_size;
            window_seconds := v_max;
            RETURN NEXT;
            RETURN;
        END IF;
    END IF;

    -- created_at must never go backwards within a partition (delayedProcessing and
    -- windowBuffer rely on it); the lock above orders pushes, the GREATEST guards the clock.
    SELECT s.created_at INTO v_prev_at
    FROM queen.log_segments s
    WHERE s.partition_id = v_pid
    ORDER BY s.base_offset DESC
    LIMIT 1;
    v_created := GREATEST(v_now, v_prev_at);

    INSERT INTO queen.log_segments
        (partition_id, base_offset, end_offset, msg_count, created_at, codec, producer, blob,
         txn_hashes)
    SELECT v_pid, v_last + 1 + t.before, v_last + t.before + t.cnt, t.cnt, v_created,
           t.codec, p_producer, t.blob, p_hashes[t.before + 1 : t.before + t.cnt]
    FROM (
        SELECT u.cnt, u.codec, u.blob,
               coalesce(sum(u.cnt) OVER (ORDER BY u.k ROWS BETWEEN UNBOUNDED PRECEDING
                                                        AND 1 PRECEDING), 0)::integer AS before
        FROM unnest(p_counts, p_codecs, p_blobs) WITH ORDINALITY AS u (cnt, codec, blob, k)
    ) t;

    UPDATE queen.log_partitions p
    SET last_offset = v_last + v_total,
        last_write_at = date_trunc('second', v_created)
    WHERE p.id = v_pid;

    stale := false; partition_id := v_pid; last_offset := v_last;
    window_seconds := v_window;
    RETURN NEXT;
END;
$$;
