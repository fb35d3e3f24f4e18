//! The `QTB1` binary transaction body (wire contract §2.12): a JSON head (the transaction
//! body without its push operations) and the pushes as `QPB1` flag-8 groups.
//!
//! `"QTB1" | u8 flags | u32 head_len | head | u32 groups | groups`. Flag 2 asks for totals
//! instead of per-operation results. As with `QPB1`, every length and every stored frame
//! is checked before anything is applied.

use super::qpb1::{decode_groups, BinaryPush, Budget, FLAG_FRAMES};
use super::reader::Reader;
use super::BinaryError;
use crate::domain::PushLimits;

/// The magic of a binary transaction body.
pub const MAGIC: &[u8; 4] = b"QTB1";
/// Flag 2: answer with totals for pushes and acks.
pub const FLAG_COUNTS: u8 = 2;

/// A decoded body: the JSON head as sent, and the pushed items with their groups.
#[derive(Debug)]
pub struct BinaryTransaction<'a> {
    /// Flag 2: answer with totals.
    pub counts_only: bool,
    /// The JSON head (may be empty: no acks, no leases).
    pub head: &'a [u8],
    /// The pushes, in wire order.
    pub push: BinaryPush,
}

/// Decodes a `QTB1` body; `limit` bounds every decompressed size and `caps` its pushes.
pub fn decode(
    body: &[u8],
    limit: usize,
    caps: PushLimits,
) -> Result<BinaryTransaction<'_>, BinaryError> {
    let mut r = Reader::new(body);
    if r.bytes(4, "magic").map_err(|_| BinaryError::Magic)? != MAGIC {
        return Err(BinaryError::Magic);
    }
    let flags = r.u8("flags")?;
    if flags & !FLAG_COUNTS != 0 {
        return Err(BinaryError::UnknownFlags(flags));
    }
    let head = r.bytes32("head_len")?;
    let mut push = BinaryPush {
        counts_only: false,
        items: Vec::new(),
        prebuilt: Vec::new(),
    };
    decode_groups(
        &mut r,
        FLAG_FRAMES,
        &mut Budget::new(limit, caps),
        &mut push,
    )?;
    Ok(BinaryTransaction {
        counts_only: flags & FLAG_COUNTS != 0,
        head,
        push,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(flags: u8, head: &[u8], groups: &[u8]) -> Vec<u8> {
        let mut out = MAGIC.to_vec();
        out.push(flags);
        out.extend_from_slice(&(head.len() as u32).to_le_bytes());
        out.extend_from_slice(head);
        out.extend_from_slice(groups);
        out
    }

    #[test]
    fn a_head_without_pushes_decodes_and_junk_is_refused_without_panics() {
        let ok = body(0, br#"{"operations":[]}"#, &0u32.to_le_bytes());
        let decoded = decode(&ok, 1 << 20, PushLimits::DEFAULT).unwrap();
        assert_eq!(decoded.head, br#"{"operations":[]}"#);
        assert!(decoded.push.items.is_empty() && !decoded.counts_only);
        assert!(
            decode(
                &body(2, b"", &0u32.to_le_bytes()),
                1 << 20,
                PushLimits::DEFAULT
            )
            .unwrap()
            .counts_only
        );
        assert!(decode(
            &body(8, b"", &0u32.to_le_bytes()),
            1 << 20,
            PushLimits::DEFAULT
        )
        .is_err());
        for cut in 0..ok.len() {
            assert!(
                decode(&ok[..cut], 1 << 20, PushLimits::DEFAULT).is_err(),
                "prefix {cut} accepted"
            );
        }
        let mut lying = ok.clone();
        lying[5..9].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(decode(&lying, 1 << 20, PushLimits::DEFAULT).is_err());
        assert!(decode(
            &body(0, b"", &[1, 0, 0, 0, 0xff]),
            1 << 20,
            PushLimits::DEFAULT
        )
        .is_err());
    }
}
