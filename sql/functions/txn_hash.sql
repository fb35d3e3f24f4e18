-- queen.txn_hash(p_txn text) -> bigint
--
-- A transaction id's 64-bit hash: the first 8 bytes of SHA-256 of the id's UTF-8 bytes,
-- big-endian, as a signed bigint. The broker computes the same value (segment::txn_hash).
-- Segments written by earlier brokers, and by queen.dead_letter_requeue_v2, store these
-- per message in txn_hashes, in offset order, so no row per message is needed to find a
-- message by its id; this release's pushes store the shorter keys of queen.txn_key.
--
-- Immutable: no table access, no locks. No notifications.
CREATE OR REPLACE FUNCTION queen.txn_hash(p_txn text) RETURNS bigint
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    SELECT ('x' || left(encode(sha256(convert_to(p_txn, 'UTF8')), 'hex'), 16))::bit(64)::bigint
$$;
