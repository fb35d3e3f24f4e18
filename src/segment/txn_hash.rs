//! The hash and the key of a transaction id, as `queen.txn_hash` and `queen.txn_key`
//! compute them in SQL.
//!
//! Every stored segment keeps the keys of its messages' transaction ids in offset order
//! (`log_segments.txn_keys_hi` and `txn_keys_lo`; segments of earlier brokers hold 64-bit
//! hashes in `txn_hashes` instead): the push's dedup window and the ack's offset lookup
//! work on them instead of a row per message. Broker and SQL must agree bit for bit, so
//! both take SHA-256 of the id's UTF-8 bytes: the hash is its first 8 bytes, big-endian,
//! as a signed integer, and the key its first 48 bits, `hash >> 16` (a test on a real
//! PostgreSQL compares them). 48 bits keep the stored rows small (6 B a message, see
//! `sql/functions/txn_key.sql`); a key names an id only together with a partition and an
//! offset range, and where a collision could lose a message (a push answered
//! `duplicate`), the stored frame's id is compared before anything is decided.

use sha2::{Digest, Sha256};

/// The 64-bit hash of one transaction id: what `queen.log_ack_v2` takes, and what brokers
/// before `sql/functions/txn_key.sql` stored.
pub fn txn_hash(transaction_id: &str) -> i64 {
    let digest = Sha256::digest(transaction_id.as_bytes());
    let mut first = [0u8; 8];
    first.copy_from_slice(&digest[..8]);
    i64::from_be_bytes(first)
}

/// The 48-bit key of one transaction id: what the windows, the lease book and the stored
/// segments hold.
pub fn txn_key(transaction_id: &str) -> i64 {
    key_of_hash(txn_hash(transaction_id))
}

/// The key a 64-bit hash stands for (an arithmetic shift, as `>>` on bigint in SQL).
pub fn key_of_hash(hash: i64) -> i64 {
    hash >> 16
}

/// Keys as the segment row stores them: `key >> 16` and the key's low 16 bits.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KeyColumns {
    /// `txn_keys_hi`: each key's upper 32 bits.
    pub hi: Vec<i32>,
    /// `txn_keys_lo`: each key's low 16 bits, as a signed `smallint`.
    pub lo: Vec<i16>,
}

impl KeyColumns {
    /// The columns of `keys`, in order.
    pub fn of(keys: &[i64]) -> Self {
        let mut columns = Self {
            hi: Vec::with_capacity(keys.len()),
            lo: Vec::with_capacity(keys.len()),
        };
        columns.extend(keys);
        columns
    }

    /// Appends the columns of `keys`.
    pub fn extend(&mut self, keys: &[i64]) {
        // A key has 48 significant bits, so `key >> 16` fits an i32 and the low 16 bits
        // are kept as they are (the casts truncate on purpose).
        self.hi.extend(keys.iter().map(|&k| (k >> 16) as i32));
        self.lo.extend(keys.iter().map(|&k| k as i16));
    }

    /// The keys the columns hold; `None` when their lengths differ.
    pub fn keys(hi: &[i32], lo: &[i16]) -> Option<Vec<i64>> {
        (hi.len() == lo.len()).then(|| {
            hi.iter()
                .zip(lo)
                .map(|(&h, &l)| (i64::from(h) << 16) | i64::from(l as u16))
                .collect()
        })
    }
}

/// A stored segment's keys as its row holds them: the key columns (this version's
/// brokers), else the 64-bit hashes of earlier brokers turned into keys; `None` for a
/// segment stored with neither.
pub fn stored_keys(
    hi: Option<Vec<i32>>,
    lo: Option<Vec<i16>>,
    hashes: Option<Vec<i64>>,
) -> Option<Vec<i64>> {
    match (hi, lo) {
        (Some(hi), Some(lo)) => KeyColumns::keys(&hi, &lo),
        _ => hashes.map(|h| h.into_iter().map(key_of_hash).collect()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hash_is_the_big_endian_head_of_sha256() {
        // sha256("abc") = ba7816bf8f01cfea...
        assert_eq!(txn_hash("abc"), 0xba7816bf8f01cfea_u64 as i64);
        assert_ne!(txn_hash("a"), txn_hash("b"));
    }

    #[test]
    fn the_key_is_the_first_48_bits_sign_extended() {
        // 0xba78_16bf_8f01 has its top bit set: the key is negative, as `>>` gives in SQL.
        assert_eq!(txn_key("abc"), (0xffff_ba78_16bf_8f01_u64) as i64);
        assert_eq!(txn_key("abc"), key_of_hash(txn_hash("abc")));
    }

    #[test]
    fn key_columns_round_trip_every_sign_and_edge() {
        let keys: Vec<i64> = ["abc", "a", "b", "", "transaction-7"]
            .iter()
            .map(|t| txn_key(t))
            .chain([0, -1, (1 << 47) - 1, -(1 << 47), 0x7fff, 0x8000, 0xffff])
            .collect();
        let columns = KeyColumns::of(&keys);
        assert_eq!(KeyColumns::keys(&columns.hi, &columns.lo), Some(keys));
        assert_eq!(KeyColumns::keys(&[1, 2], &[3]), None);
    }

    #[test]
    fn stored_keys_come_from_the_columns_else_from_hashes() {
        let columns = KeyColumns::of(&[txn_key("a"), txn_key("b")]);
        let from_columns = stored_keys(Some(columns.hi), Some(columns.lo), None);
        let from_hashes = stored_keys(None, None, Some(vec![txn_hash("a"), txn_hash("b")]));
        assert_eq!(from_columns, Some(vec![txn_key("a"), txn_key("b")]));
        assert_eq!(from_hashes, from_columns);
        assert_eq!(stored_keys(None, None, None), None);
    }
}
