-- queen.segment_txn_keys(p_hashes bigint[], p_hi integer[], p_lo smallint[]) -> bigint[]
--
-- A segment's 48-bit transaction-id keys (see queen.txn_key) in offset order, from
-- whichever it stores: the txn_keys_hi/txn_keys_lo pair (p_hi, p_lo) or the 64-bit
-- txn_hashes (p_hashes, each shifted right by 16). NULL when it holds neither (a segment
-- whose ids are only in queen.dedup). queen.log_resolve_offsets_v2 uses it to compare
-- both kinds of segment alike.
--
-- Immutable: no table access, no locks. No notifications.
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
