-- queen.txn_key(p_txn text) -> bigint
--
-- A transaction id's 48-bit key: the first 48 bits of SHA-256 of its UTF-8 bytes, that is
-- queen.txn_hash(p_txn) >> 16 (an arithmetic shift), so a hash an earlier broker stored
-- turns into the same key. Segments store it split in two narrow arrays, txn_keys_hi
-- (key >> 16, an int4) and txn_keys_lo (the low 16 bits, as a signed int2).
--
-- Why keys and not the hashes: the hashes were 824 B of a 100-message segment row, 8.2 B
-- of the 72.8 B of WAL a message queen-bench measured at batch 100 (the segment rows are
-- nine tenths of the broker's WAL); the keys take 6 B a message and two array headers,
-- 648 B a segment. Two int arrays and not one packed bytea, because PostgreSQL unnests
-- them at C speed (a bytea would need six get_byte calls a key: about 35 us a 100-key
-- segment against 12).
--
-- What the width decides: a push answered `duplicate` is always checked against the stored
-- frame's id (a key only finds candidates); an ack inside a lease's span and an admin
-- lookup by id take the key's word. For two ids among a 100-message lease to share a key
-- is about 2e-11; for a lookup among 10^8 messages of a partition to meet another id's
-- key, about 4e-7.
--
-- Immutable: no table access, no locks. No notifications.
CREATE OR REPLACE FUNCTION queen.txn_key(p_txn text) RETURNS bigint
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    SELECT queen.txn_hash(p_txn) >> 16
$$;
