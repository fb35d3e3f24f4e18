//! The 64-bit hash of a transaction id, as `queen.txn_hash` computes it in SQL.
//!
//! Every stored segment keeps the hashes of its messages' transaction ids in offset order
//! (`log_segments.txn_hashes`): the push's dedup window and the ack's offset lookup work on
//! them instead of a row per message. Broker and SQL must agree bit for bit, so both take
//! the first 8 bytes of SHA-256 of the id's UTF-8 bytes, big-endian, as a signed integer
//! (a test on a real PostgreSQL compares them). A hash names an id only together with a
//! partition and an offset range; where a collision could lose a message (a push answered
//! `duplicate`), the stored frame's id is compared before anything is decided.

use sha2::{Digest, Sha256};

/// The hash of one transaction id.
pub fn txn_hash(transaction_id: &str) -> i64 {
    let digest = Sha256::digest(transaction_id.as_bytes());
    let mut first = [0u8; 8];
    first.copy_from_slice(&digest[..8]);
    i64::from_be_bytes(first)
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
}
