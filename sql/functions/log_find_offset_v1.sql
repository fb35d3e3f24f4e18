-- queen.log_find_offset_v1(p_pid, p_txn) -> bigint
--
-- The offset of one transaction id anywhere in partition p_pid, for admin lookups
-- (queen.message_get_v1, queen.message_segment_lock_v1): the newest offset whose stored id
-- matches, else the legacy queen.dedup row's, else NULL. Segments store ids in one of two
-- kinds: 64-bit hashes (txn_hashes, see queen.txn_hash) or 48-bit keys split into
-- txn_keys_hi/txn_keys_lo (see queen.txn_key). Each kind is found through the containment
-- test on its own column first, then compared in full (the hash) or by the key's 48 bits.
-- A key match is taken at its word (for another id to share the key among 10^8 messages of
-- a partition is about 4e-7).
--
-- Scans the partition's segments: for single-message admin routes, never the data path.
-- Read only: no locks. No notifications.
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
