-- queen.log_resolve_offsets_v2(p_pid, p_after, p_upto, p_hashes, p_txn_ids, p_done)
--   -> bigint[]
--
-- Finds the offsets of transaction ids in partition p_pid for an ack
-- (queen.log_ack_v2), in the order given. p_hashes[i] is queen.txn_hash(p_txn_ids[i]),
-- computed by the broker, and is compared as its 48-bit key (hash >> 16, see
-- queen.txn_key), so that segments storing keys and segments storing hashes both answer.
-- For each id: its offset in (p_after, p_upto], the lease's span, as the segments there
-- number it (the span may begin past p_after + 1: retention may have deleted the
-- segments before a lease's first delivered message; counted from p_after + 1, such an
-- ack settled the wrong messages, kept the lease, and the rest came again after the
-- lease expired: docs/scale-out.md, "Part nine"). An id that occurs more
-- than once there (only a queue without dedup allows it) takes its first occurrence that
-- is neither in p_done (the cursor's acked_ahead: done already) nor taken by an earlier
-- item of this call, so each ack of it settles one more message
-- (tests/broker/ack_repeated_transaction_id.rs); the first occurrence when all are done
-- (an ack repeated). v1 took the first occurrence always, so a repeated id acked ahead of
-- an earlier message of its lease left its other occurrences unacked. Else its newest
-- offset at
-- or below p_after within the thousand segments below (an ack of a message already done);
-- else its offset in the legacy queen.dedup rows (segments with neither keys nor hashes);
-- else NULL.
--
-- Reads the segments overlapping the span through the primary key (one backward probe,
-- then forward), so the cost follows the lease, not the partition, and only the span's
-- part of each segment is turned into keys. A whole span acked in delivery order is one
-- array comparison. Two ids of one 100-message lease share a key with a probability of
-- about 2e-11; the key's word is taken.
--
-- Read only: no locks. No notifications.
CREATE OR REPLACE FUNCTION queen.log_resolve_offsets_v2(
    p_pid     bigint,
    p_after   bigint,
    p_upto    bigint,
    p_hashes  bigint[],
    p_txn_ids text[],
    p_done    bigint[]
) RETURNS bigint[] LANGUAGE plpgsql STABLE AS $$
DECLARE
    v_keys bigint[];
    v_span bigint[] := '{}';
    -- The offset of each key of v_span: the span's segments need not start at
    -- p_after + 1 (retention may have deleted the segments before the lease's first
    -- delivered message, which then begins the span), so a key's offset is read here,
    -- never counted from p_after.
    v_span_off bigint[] := '{}';
    v_offs bigint[];
    v_pos  integer;
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
        v_span_off := v_span_off || ARRAY(
            SELECT o FROM generate_series(r.base_offset + r.a - 1, r.base_offset + r.b - 1) AS o
            ORDER BY o);
        IF r.txn_keys_hi IS NOT NULL THEN
            v_span := v_span || ARRAY(
                SELECT (u.hi::bigint << 16) | (u.lo::bigint & 65535)
                FROM unnest(r.txn_keys_hi[r.a : r.b], r.txn_keys_lo[r.a : r.b])
                     WITH ORDINALITY AS u (hi, lo, k)
                ORDER BY u.k);
        ELSIF r.txn_hashes IS NOT NULL THEN
            v_span := v_span || ARRAY(
                SELECT u.h >> 16
                FROM unnest(r.txn_hashes[r.a : r.b]) WITH ORDINALITY AS u (h, k)
                ORDER BY u.k);
        ELSE
            -- A legacy segment: its offsets stay unknown here (the dedup rows answer
            -- below).
            v_span := v_span || array_fill(NULL::bigint, ARRAY[(r.b - r.a + 1)::integer]);
        END IF;
    END LOOP;

    IF v_span = v_keys THEN
        -- The common case: the whole span, in delivery order.
        RETURN v_span_off;
    END IF;
    -- Otherwise each key's position in the span (C-level scans of at most a lease's ids),
    -- past occurrences done already or taken by an earlier item.
    v_offs := '{}';
    FOR i IN 1 .. cardinality(v_keys) LOOP
        v_pos := array_position(v_span, v_keys[i]);
        WHILE v_pos IS NOT NULL
              AND (v_span_off[v_pos] = ANY (v_offs)
                   OR v_span_off[v_pos] = ANY (coalesce(p_done, '{}'))) LOOP
            v_pos := array_position(v_span, v_keys[i], v_pos + 1);
        END LOOP;
        IF v_pos IS NULL THEN
            v_pos := array_position(v_span, v_keys[i]);
        END IF;
        v_offs := v_offs || v_span_off[v_pos];
    END LOOP;

    IF array_position(v_offs, NULL) IS NOT NULL THEN
        -- Below the range: an ack of something already done (bounded look back), then the
        -- legacy dedup rows.
        WITH want AS (
            SELECT t.i, t.h FROM unnest(v_keys) WITH ORDINALITY AS t (h, i)
            WHERE v_offs[t.i] IS NULL
        ), below AS (
            SELECT s.base_offset,
                   queen.segment_txn_keys(s.txn_hashes, s.txn_keys_hi, s.txn_keys_lo)
                       AS keys
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
