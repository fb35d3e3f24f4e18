-- 015_txn_hash: transaction ids as 64-bit hashes, and finding a message's offset by them.
--
-- queen.txn_hash(p_txn) -> bigint
--   The first 8 bytes of SHA-256 of the id's UTF-8 bytes, big-endian, as a signed bigint.
--   The broker computes the same value (segment::txn_hash) for every pushed message and
--   stores them per segment (log_segments.txn_hashes, in offset order), so no row per
--   message is needed to find a message by its transaction id. Immutable; no locks.
--
-- queen.log_resolve_offsets_v1(p_pid, p_after, p_upto, p_hashes, p_txn_ids) -> bigint[]
--   p_hashes[i] is queen.txn_hash(p_txn_ids[i]) (the broker computes them). For each id:
--   its offset in (p_after, p_upto] (the first when an id occurs twice there, which only a
--   queue without dedup allows), else its newest offset at or below p_after within the
--   1,000 segments below (an ack of a message already done), else its offset in the legacy
--   queen.dedup rows, else NULL. Reads the segments overlapping the range through the
--   primary key, so the cost follows the lease, not the partition; a whole span acked in
--   delivery order is one array comparison. No locks.
--
-- queen.log_find_offset_v1(p_pid, p_txn) -> bigint
--   The newest offset of one id anywhere in the partition (admin lookups), else the legacy
--   dedup row's, else NULL. Scans the partition's segments: for single-message admin
--   routes, never the data path. No locks.

CREATE OR REPLACE FUNCTION queen.txn_hash(p_txn text) RETURNS bigint
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    SELECT ('x' || left(encode(sha256(convert_to(p_txn, 'UTF8')), 'hex'), 16))::bit(64)::bigint
$$;

CREATE OR REPLACE FUNCTION queen.log_resolve_offsets_v1(
    p_pid     bigint,
    p_after   bigint,
    p_upto    bigint,
    p_hashes  bigint[],
    p_txn_ids text[]
) RETURNS bigint[] LANGUAGE plpgsql STABLE AS $$
DECLARE
    v_span bigint[] := '{}';
    v_offs bigint[];
    r      record;
BEGIN
    IF coalesce(cardinality(p_hashes), 0) = 0 THEN
        RETURN '{}';
    END IF;
    -- The hashes of offsets (p_after, p_upto] in order, from the segments that hold them:
    -- the one holding p_after + 1 (one backward index probe), then forward to p_upto.
    FOR r IN
        SELECT s.base_offset, s.end_offset, s.txn_hashes
        FROM queen.log_segments s
        WHERE s.partition_id = p_pid
          AND s.base_offset >= coalesce(
                (SELECT x.base_offset FROM queen.log_segments x
                 WHERE x.partition_id = p_pid AND x.base_offset <= p_after + 1
                 ORDER BY x.base_offset DESC LIMIT 1), -1)
          AND s.base_offset <= p_upto
        ORDER BY s.base_offset
    LOOP
        IF r.txn_hashes IS NULL THEN
            -- A legacy segment: its offsets stay unknown here (the dedup rows answer below).
            v_span := v_span || array_fill(NULL::bigint,
                ARRAY[(least(r.end_offset, p_upto) - greatest(r.base_offset, p_after + 1) + 1)::integer]);
        ELSE
            v_span := v_span || r.txn_hashes[greatest(r.base_offset, p_after + 1) - r.base_offset + 1
                                             : least(r.end_offset, p_upto) - r.base_offset + 1];
        END IF;
    END LOOP;

    IF v_span = p_hashes THEN
        -- The common case: the whole span, in delivery order.
        SELECT array_agg(o) INTO v_offs FROM generate_series(p_after + 1, p_upto) AS o;
        RETURN v_offs;
    END IF;
    -- Otherwise each hash's position in the span (C-level scans of at most a lease's ids).
    SELECT array_agg(p_after + array_position(v_span, t.h) ORDER BY t.i) INTO v_offs
    FROM unnest(p_hashes) WITH ORDINALITY AS t (h, i);

    IF array_position(v_offs, NULL) IS NOT NULL THEN
        -- Below the range: an ack of something already done (bounded look back), then the
        -- legacy dedup rows.
        WITH want AS (
            SELECT t.i, t.h FROM unnest(p_hashes) WITH ORDINALITY AS t (h, i)
            WHERE v_offs[t.i] IS NULL
        ), below AS (
            SELECT s.base_offset, s.txn_hashes
            FROM queen.log_segments s
            WHERE s.partition_id = p_pid AND s.base_offset <= p_after
            ORDER BY s.base_offset DESC
            LIMIT 1000
        ), have AS (
            SELECT x.hash, b.base_offset + x.k - 1 AS off
            FROM below b
            CROSS JOIN LATERAL unnest(b.txn_hashes) WITH ORDINALITY AS x (hash, k)
        ), found AS (
            SELECT w.i, max(hv.off) AS off
            FROM want w JOIN have hv ON hv.hash = w.h AND hv.off <= p_after
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
    v_off bigint;
BEGIN
    SELECT s.base_offset + x.k - 1 INTO v_off
    FROM queen.log_segments s
    CROSS JOIN LATERAL unnest(s.txn_hashes) WITH ORDINALITY AS x (hash, k)
    WHERE s.partition_id = p_pid AND s.txn_hashes @> ARRAY[v_h] AND x.hash = v_h
    ORDER BY 1 DESC
    LIMIT 1;
    IF v_off IS NULL THEN
        SELECT d.message_offset INTO v_off
        FROM queen.dedup d
        WHERE d.partition_id = p_pid AND d.transaction_id = p_txn;
    END IF;
    RETURN v_off;
END;
$$;
