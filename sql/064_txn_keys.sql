-- 064_txn_keys: segments keep 48-bit transaction-id keys in two narrow arrays instead of
-- 64-bit hashes; every reader takes both kinds of segment.
--
-- The hashes were 824 B of a 100-message segment row (an int8 array), 8.2 B of the
-- 72.8 B of WAL a message queen-bench measured at batch 100 (pg_waldump --stats=record:
-- the segment rows are nine tenths of the broker's WAL). A key is the first 48 bits of
-- SHA-256 of the id's UTF-8 bytes, that is queen.txn_hash(id) >> 16 (arithmetic shift),
-- so a hash an earlier broker stored turns into the same key. It is stored as
-- txn_keys_hi (key >> 16, an int4) and txn_keys_lo (the key's low 16 bits, as a signed
-- int2): 6 B a message and two array headers, 648 B a segment. Two int arrays and not one
-- packed bytea because PostgreSQL unnests them at C speed (a bytea would need six
-- get_byte calls a key: about 35 us a 100-key segment against 12).
--
-- What the width decides: a push answered `duplicate` is always checked against the
-- stored frame's id (a key only finds candidates); an ack inside a lease's span and an
-- admin lookup by id take the key's word, as they took the hash's. For two ids among a
-- 100-message lease to share a key is about 2e-11; for a lookup among 10^8 messages of a
-- partition to meet another id's key, about 4e-7.
--
-- log_segments.txn_keys_hi integer[], txn_keys_lo smallint[]
--   Written by this version's broker instead of txn_hashes, in offset order. A segment
--   holds one kind, txn_hashes (earlier brokers, and the dead-letter requeue) or the keys,
--   or neither (segments from before 015; their ids are in queen.dedup).
--
-- queen.txn_key(p_txn) -> bigint
--   The key of one id. Immutable.
-- queen.segment_txn_keys(p_hashes, p_hi, p_lo) -> bigint[]
--   A segment's keys in offset order from whichever it holds; NULL when neither.
--
-- queen.log_resolve_offsets_v1, queen.log_find_offset_v1: the same signatures and answers
--   as in 015, compared in keys so that both kinds of segment answer. Brokers of the
--   previous version call them too (through log_ack_v2 and the admin routes), with 64-bit
--   hashes, which become keys here.
--
-- queen.log_push_v3(p_tenant, p_queue, p_partition, p_known_last, p_default_window,
--                   p_counts, p_codecs, p_blobs, p_keys_hi, p_keys_lo, p_producer)
--   log_push_v2 (016) writing keys: p_keys_hi/p_keys_lo hold every message's key in
--   order, and a stale answer lists each segment's key columns (seg_keys_hi, seg_keys_lo)
--   or its hashes (seg_hashes), as stored (the broker turns them into keys); the codec
--   and blob only for a segment with neither.
--
-- Rolling upgrades: brokers of the previous version keep calling log_push_v2 and writing
-- txn_hashes, which this version reads. They see the segments this version writes as
-- segments without hashes: log_push_v2 hands them the blob, from whose frames their window
-- reads the ids; their claim returns no hashes for them, so their acks skip the known-
-- and whole-lease statements and go through log_ack_v2, which resolves ids with the
-- function below.

ALTER TABLE queen.log_segments ADD COLUMN IF NOT EXISTS txn_keys_hi integer[];
ALTER TABLE queen.log_segments ADD COLUMN IF NOT EXISTS txn_keys_lo smallint[];

CREATE OR REPLACE FUNCTION queen.txn_key(p_txn text) RETURNS bigint
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    SELECT queen.txn_hash(p_txn) >> 16
$$;

CREATE OR REPLACE FUNCTION queen.segment_txn_keys(
    p_hashes bigint[],
    p_hi     integer[],
    p_lo     smallint[]
) RETURNS bigint[] LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE
        WHEN p_hi IS NOT NULL THEN
            (SELECT array_agg((u.hi::bigint << 16) | (u.lo::bigint & 65535) ORDER BY u.k)
             FROM unnest(p_hi, p_lo) WITH ORDINALITY AS u (hi, lo, k))
        WHEN p_hashes IS NOT NULL THEN
            (SELECT array_agg(u.h >> 16 ORDER BY u.k)
             FROM unnest(p_hashes) WITH ORDINALITY AS u (h, k))
    END
$$;

CREATE OR REPLACE FUNCTION queen.log_resolve_offsets_v1(
    p_pid     bigint,
    p_after   bigint,
    p_upto    bigint,
    p_hashes  bigint[],
    p_txn_ids text[]
) RETURNS bigint[] LANGUAGE plpgsql STABLE AS $$
DECLARE
    v_keys bigint[];
    v_span bigint[] := '{}';
    v_offs bigint[];
    r      record;
BEGIN
    IF coalesce(cardinality(p_hashes), 0) = 0 THEN
        RETURN '{}';
    END IF;
    SELECT array_agg(t.h >> 16 ORDER BY t.i) INTO v_keys
    FROM unnest(p_hashes) WITH ORDINALITY AS t (h, i);
    -- The keys of offsets (p_after, p_upto] in order, from the segments that hold them:
    -- the one holding p_after + 1 (one backward index probe), then forward to p_upto.
    -- Only the span's part of each segment is turned into keys.
    FOR r IN
        SELECT s.base_offset, s.end_offset, s.txn_hashes, s.txn_keys_hi, s.txn_keys_lo,
               greatest(s.base_offset, p_after + 1) - s.base_offset + 1 AS a,
               least(s.end_offset, p_upto) - s.base_offset + 1 AS b
        FROM queen.log_segments s
        WHERE s.partition_id = p_pid
          AND s.base_offset >= coalesce(
                (SELECT x.base_offset FROM queen.log_segments x
                 WHERE x.partition_id = p_pid AND x.base_offset <= p_after + 1
                 ORDER BY x.base_offset DESC LIMIT 1), -1)
          AND s.base_offset <= p_upto
        ORDER BY s.base_offset
    LOOP
        IF r.txn_keys_hi IS NOT NULL THEN
            v_span := v_span || ARRAY(
                SELECT (u.hi::bigint << 16) | (u.lo::bigint & 65535)
                FROM unnest(r.txn_keys_hi[r.a : r.b], r.txn_keys_lo[r.a : r.b])
                     WITH ORDINALITY AS u (hi, lo, k)
                ORDER BY u.k);
        ELSIF r.txn_hashes IS NOT NULL THEN
            v_span := v_span || ARRAY(
                SELECT u.h >> 16 FROM unnest(r.txn_hashes[r.a : r.b]) WITH ORDINALITY AS u (h, k)
                ORDER BY u.k);
        ELSE
            -- A legacy segment: its offsets stay unknown here (the dedup rows answer below).
            v_span := v_span || array_fill(NULL::bigint, ARRAY[(r.b - r.a + 1)::integer]);
        END IF;
    END LOOP;

    IF v_span = v_keys THEN
        -- The common case: the whole span, in delivery order.
        SELECT array_agg(o) INTO v_offs FROM generate_series(p_after + 1, p_upto) AS o;
        RETURN v_offs;
    END IF;
    -- Otherwise each key's position in the span (C-level scans of at most a lease's ids).
    SELECT array_agg(p_after + array_position(v_span, t.h) ORDER BY t.i) INTO v_offs
    FROM unnest(v_keys) WITH ORDINALITY AS t (h, i);

    IF array_position(v_offs, NULL) IS NOT NULL THEN
        -- Below the range: an ack of something already done (bounded look back), then the
        -- legacy dedup rows.
        WITH want AS (
            SELECT t.i, t.h FROM unnest(v_keys) WITH ORDINALITY AS t (h, i)
            WHERE v_offs[t.i] IS NULL
        ), below AS (
            SELECT s.base_offset,
                   queen.segment_txn_keys(s.txn_hashes, s.txn_keys_hi, s.txn_keys_lo) AS keys
            FROM queen.log_segments s
            WHERE s.partition_id = p_pid AND s.base_offset <= p_after
            ORDER BY s.base_offset DESC
            LIMIT 1000
        ), have AS (
            SELECT x.key, b.base_offset + x.k - 1 AS off
            FROM below b
            CROSS JOIN LATERAL unnest(b.keys) WITH ORDINALITY AS x (key, k)
        ), found AS (
            SELECT w.i, max(hv.off) AS off
            FROM want w JOIN have hv ON hv.key = w.h AND hv.off <= p_after
            GROUP BY w.i
        )
        SELECT array_agg(coalesce(v_offs[o.i], f.off, d.message_offset) ORDER BY o.i)
        INTO v_offs
        FROM unnest(p_txn_ids) WITH ORDINALITY AS o (txn, i)
        LEFT JOIN found f ON f.i = o.i
        LEFT JOIN queen.dedup d
          ON v_offs[o.i] IS NULL AND f.off IS NULL
         AND d.partition_id = p_pid AND d.transaction_id = o.txn;
    END IF;
    RETURN v_offs;
END;
$$;

CREATE OR REPLACE FUNCTION queen.log_find_offset_v1(
    p_pid bigint,
    p_txn text
) RETURNS bigint LANGUAGE plpgsql STABLE AS $$
DECLARE
    v_h   bigint := queen.txn_hash(p_txn);
    v_hi  integer := (v_h >> 32)::integer;
    v_lo  bigint := (v_h >> 16) & 65535;
    v_off bigint;
BEGIN
    -- Each kind of segment through the containment test of its own column first.
    SELECT max(f.off) INTO v_off
    FROM (
        SELECT s.base_offset + x.k - 1 AS off
        FROM queen.log_segments s
        CROSS JOIN LATERAL unnest(s.txn_hashes) WITH ORDINALITY AS x (hash, k)
        WHERE s.partition_id = p_pid AND s.txn_hashes @> ARRAY[v_h] AND x.hash = v_h
        UNION ALL
        SELECT s.base_offset + x.k - 1
        FROM queen.log_segments s
        CROSS JOIN LATERAL unnest(s.txn_keys_hi, s.txn_keys_lo) WITH ORDINALITY AS x (hi, lo, k)
        WHERE s.partition_id = p_pid AND s.txn_keys_hi @> ARRAY[v_hi]
          AND x.hi = v_hi AND (x.lo::bigint & 65535) = v_lo
    ) f;
    IF v_off IS NULL THEN
        SELECT d.message_offset INTO v_off
        FROM queen.dedup d
        WHERE d.partition_id = p_pid AND d.transaction_id = p_txn;
    END IF;
    RETURN v_off;
END;
$$;

CREATE OR REPLACE FUNCTION queen.log_push_v3(
    p_tenant         text,
    p_queue          text,
    p_partition      text,
    p_known_last     bigint,
    p_default_window integer,
    p_counts         integer[],
    p_codecs         smallint[],
    p_blobs          bytea[],
    p_keys_hi        integer[],
    p_keys_lo        smallint[],
    p_producer       text
) RETURNS TABLE (
    stale          boolean,
    partition_id   bigint,
    last_offset    bigint,
    window_seconds integer,
    seg_base       bigint,
    seg_end        bigint,
    seg_age_ms     bigint,
    seg_keys_hi    integer[],
    seg_keys_lo    smallint[],
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
       OR v_total IS DISTINCT FROM cardinality(p_keys_hi)
       OR v_total IS DISTINCT FROM cardinality(p_keys_lo)
       OR EXISTS (SELECT 1 FROM unnest(p_counts) AS c WHERE c IS NULL OR c < 1) THEN
        RAISE EXCEPTION 'log_push_v3: counts, codecs and blobs must be non-empty and equal, keys one per message'
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
            SELECT s.base_offset, s.end_offset, s.created_at, s.codec, s.blob, s.txn_hashes,
                   s.txn_keys_hi, s.txn_keys_lo
            FROM queen.log_segments s
            WHERE s.partition_id = v_pid
              AND s.base_offset > CASE WHEN p_known_last <= v_last THEN p_known_last ELSE -1 END
            ORDER BY s.base_offset DESC
        LOOP
            EXIT WHEN r.created_at < v_now - make_interval(secs => v_window);
            seg_base := r.base_offset;
            seg_end := r.end_offset;
            seg_age_ms := (extract(epoch FROM (v_now - r.created_at)) * 1000)::bigint;
            seg_keys_hi := r.txn_keys_hi;
            seg_keys_lo := r.txn_keys_lo;
            seg_hashes := r.txn_hashes;
            seg_codec := CASE WHEN r.txn_keys_hi IS NULL AND r.txn_hashes IS NULL THEN r.codec END;
            seg_blob := CASE WHEN r.txn_keys_hi IS NULL AND r.txn_hashes IS NULL THEN r.blob END;
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
         txn_keys_hi, txn_keys_lo)
    SELECT v_pid, v_last + 1 + t.before, v_last + t.before + t.cnt, t.cnt, v_created,
           t.codec, p_producer, t.blob, p_keys_hi[t.before + 1 : t.before + t.cnt],
           p_keys_lo[t.before + 1 : t.before + t.cnt]
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
