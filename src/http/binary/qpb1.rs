//! The `QPB1` binary push body (wire contract §2.2), decoded into the push items the JSON
//! body becomes, plus the client-compressed groups of flag 8 to store as they are.
//!
//! Everything is checked before anything is stored: lengths against the bytes that remain,
//! decompressed sizes against the body limit, and with flag 8 every stored frame (flags,
//! message id, transaction id, JSON payload) and the zstd frame's recorded content size.
//! A body that fails any check stores nothing.

use std::borrow::Cow;

use serde::de::IgnoredAny;
use uuid::Uuid;

pub use super::error::BinaryError;
use super::reader::Reader;
use crate::domain::{PartitionName, PushLimits, PushTally, QueueName};
use crate::domain::{PrebuiltSegment, PushItem};
use crate::segment::{FrameError, FrameIter, StoredFrame};

/// The magic of a binary push body.
pub const MAGIC: &[u8; 4] = b"QPB1";
/// Flag 1: the body after `raw_len` is one zstd frame.
pub const FLAG_ZSTD: u8 = 1;
/// Flag 2: answer with totals instead of one object per message.
pub const FLAG_COUNTS: u8 = 2;
/// Flag 4: every item carries a transaction id (empty: the broker mints one).
pub const FLAG_TXN: u8 = 4;
/// Flag 8: groups carry stored frames, zstd-compressed per group.
pub const FLAG_FRAMES: u8 = 8;
const KNOWN_FLAGS: u8 = FLAG_ZSTD | FLAG_COUNTS | FLAG_TXN | FLAG_FRAMES;

/// Frame flag a client frame may carry: a trace id. Producer (2) is stamped by the broker
/// and never accepted from a body (contract §2.1); encrypted (4) payloads cannot be checked
/// as JSON and must not reach framed pops.
const CLIENT_FRAME_FLAGS: u8 = crate::segment::frame::FLAG_TRACE;

/// A decoded body: the items in wire order and, with flag 8, the groups to store as sent.
#[derive(Debug)]
pub struct BinaryPush {
    /// Flag 2: answer with totals.
    pub counts_only: bool,
    /// One item per message, in wire order.
    pub items: Vec<PushItem>,
    /// Flag 8: one per group, covering its items.
    pub prebuilt: Vec<PrebuiltSegment>,
}

/// Fewest bytes a flag 0 item takes: a `u32` payload length and a one-byte JSON payload.
/// Items are reserved for at most the bytes left divided by this, so a lying `n` cannot
/// reserve memory the body does not back.
const MIN_ITEM_BYTES: usize = 5;

/// Decodes a `QPB1` body. `limit` bounds every decompressed size (the body limit: the same
/// messages sent as JSON would have had to fit it too); `caps` bounds the messages and
/// partitions, counted as they are read.
pub fn decode(body: &[u8], limit: usize, caps: PushLimits) -> Result<BinaryPush, BinaryError> {
    let mut r = Reader::new(body);
    if r.bytes(4, "magic").map_err(|_| BinaryError::Magic)? != MAGIC {
        return Err(BinaryError::Magic);
    }
    let flags = r.u8("flags")?;
    if flags & !KNOWN_FLAGS != 0 {
        return Err(BinaryError::UnknownFlags(flags));
    }
    let mut budget = Budget::new(limit, caps);
    // Positions in errors count in the body, or in the decompressed body under flag 1.
    let base = if flags & FLAG_ZSTD != 0 {
        0
    } else {
        r.position()
    };
    let inner: Cow<'_, [u8]> = if flags & FLAG_ZSTD != 0 {
        let raw_len = r.u32("raw_len")?;
        budget.spend(raw_len as usize)?;
        let z = r.rest();
        let what = "the zstd body";
        single_frame(z, what)?;
        if let Ok(Some(recorded)) = zstd::zstd_safe::get_frame_content_size(z) {
            if recorded != u64::from(raw_len) {
                return Err(BinaryError::SizeMismatch {
                    what: what.to_owned(),
                    stated: u64::from(raw_len),
                    actual: usize::try_from(recorded).unwrap_or(usize::MAX),
                });
            }
        }
        Cow::Owned(decompress(z, raw_len as usize, what)?)
    } else {
        Cow::Borrowed(r.rest())
    };

    let mut out = BinaryPush {
        counts_only: flags & FLAG_COUNTS != 0,
        items: Vec::new(),
        prebuilt: Vec::new(),
    };
    let mut r = Reader::at(&inner, base);
    decode_groups(&mut r, flags, &mut budget, &mut out)?;
    Ok(out)
}

/// Decodes a body's `u32 groups` and the groups after it (the layout `flags` selects), up
/// to the end of the body, which must be the end of the last group. `QTB1` reuses it with
/// flag 8 for its pushes.
pub(crate) fn decode_groups(
    r: &mut Reader<'_>,
    flags: u8,
    budget: &mut Budget,
    out: &mut BinaryPush,
) -> Result<(), BinaryError> {
    let groups = r.u32("groups")?;
    for group in 0..groups as usize {
        let queue = r.str16("queue")?;
        let partition = r.str16("partition")?;
        let (queue, partition) = names(group, queue, partition)?;
        budget.tally.partition(&queue, &partition)?;
        let n = r.u32("n")?;
        budget.tally.messages(n as usize)?;
        if flags & FLAG_FRAMES != 0 {
            let z = r.bytes32("z_len")?;
            frames_group(out, budget, group, (queue, partition), n, z)?;
        } else {
            out.items
                .reserve((n as usize).min(r.remaining() / MIN_ITEM_BYTES));
            for index in 0..n as usize {
                let txn = if flags & FLAG_TXN != 0 {
                    Some(r.str16("transactionId")?).filter(|t| !t.is_empty())
                } else {
                    None
                };
                let payload = r.bytes32("payload")?;
                if serde_json::from_slice::<IgnoredAny>(payload).is_err() {
                    return Err(BinaryError::NotJson { group, index });
                }
                out.items.push(PushItem {
                    queue: queue.clone(),
                    partition: partition.clone(),
                    payload: payload.to_vec(),
                    transaction_id: txn.map(str::to_owned),
                    trace_id: None,
                    producer: None,
                });
            }
        }
    }
    if r.remaining() != 0 {
        return Err(BinaryError::Trailing {
            at: r.position(),
            extra: r.remaining(),
        });
    }
    Ok(())
}

/// Decompressed bytes still allowed in this body, and its messages and partitions so far.
pub(crate) struct Budget {
    left: usize,
    limit: usize,
    tally: PushTally,
}

impl Budget {
    /// A budget of `limit` decompressed bytes under `caps`.
    pub(crate) fn new(limit: usize, caps: PushLimits) -> Self {
        Budget {
            left: limit,
            limit,
            tally: PushTally::new(caps),
        }
    }
}

impl Budget {
    fn spend(&mut self, n: usize) -> Result<(), BinaryError> {
        self.left = self
            .left
            .checked_sub(n)
            .ok_or(BinaryError::TooLarge { limit: self.limit })?;
        Ok(())
    }
}

fn names(
    group: usize,
    queue: &str,
    partition: &str,
) -> Result<(QueueName, PartitionName), BinaryError> {
    let name = |source| BinaryError::Name { group, source };
    let queue = QueueName::parse(queue).map_err(name)?;
    // An empty partition is "not given", as an absent one is in the JSON body.
    let partition = if partition.is_empty() {
        PartitionName::default_partition()
    } else {
        PartitionName::parse(partition).map_err(name)?
    };
    Ok((queue, partition))
}

/// One flag-8 group: checks the zstd frame and every stored frame in it, then records the
/// items and the bytes to store as they are.
fn frames_group(
    out: &mut BinaryPush,
    budget: &mut Budget,
    group: usize,
    (queue, partition): (QueueName, PartitionName),
    n: u32,
    z: &[u8],
) -> Result<(), BinaryError> {
    let what = || format!("group {group}");
    // One frame, nothing after it: the bytes are stored and later shipped as one record.
    single_frame(z, &what())?;
    let size = match zstd::zstd_safe::get_frame_content_size(z) {
        Ok(Some(size)) => size,
        Ok(None) => return Err(BinaryError::NoContentSize { group }),
        Err(_) => return Err(BinaryError::Zstd { what: what() }),
    };
    let size = usize::try_from(size).map_err(|_| BinaryError::TooLarge {
        limit: budget.limit,
    })?;
    budget.spend(size)?;
    let raw = decompress(z, size, &what())?;

    let first = out.items.len();
    let mut message_ids = Vec::new();
    let mut found: u64 = 0;
    for (index, frame) in FrameIter::new(&raw).enumerate() {
        found += 1;
        if found > u64::from(n) {
            break;
        }
        let frame = frame.map_err(|e| frame_error(group, index, &e))?;
        check_frame(group, index, &frame)?;
        message_ids.push(frame.message_id);
        out.items.push(PushItem {
            queue: queue.clone(),
            partition: partition.clone(),
            payload: frame.payload.to_vec(),
            transaction_id: Some(frame.transaction_id.to_owned()),
            trace_id: frame.trace_id,
            producer: None,
        });
    }
    if found != u64::from(n) {
        return Err(BinaryError::FrameCount {
            group,
            stated: n,
            found,
        });
    }
    if n > 0 {
        out.prebuilt.push(PrebuiltSegment {
            first,
            message_ids,
            bytes: z.to_vec(),
        });
    }
    Ok(())
}

fn check_frame(group: usize, index: usize, frame: &StoredFrame<'_>) -> Result<(), BinaryError> {
    let refuse = |reason: &str| BinaryError::Frame {
        group,
        index,
        reason: reason.to_owned(),
    };
    if frame.flags & !CLIENT_FRAME_FLAGS != 0 {
        return Err(refuse(&format!(
            "frame flags {:#04x} not accepted from a client (only 1, trace id)",
            frame.flags
        )));
    }
    if frame.message_id == Uuid::nil() {
        return Err(refuse("message id is missing (nil)"));
    }
    // Stored as it is, so the transaction id in the frame is the dedup key: it cannot be
    // left for the broker to mint.
    if frame.transaction_id.is_empty() {
        return Err(refuse("transaction id is empty"));
    }
    // Acks carry transaction ids as PostgreSQL text, which cannot hold a NUL.
    if frame.transaction_id.contains('\0') {
        return Err(refuse("transaction id contains a NUL character"));
    }
    if serde_json::from_slice::<IgnoredAny>(frame.payload).is_err() {
        return Err(BinaryError::NotJson { group, index });
    }
    Ok(())
}

fn frame_error(group: usize, index: usize, e: &FrameError) -> BinaryError {
    BinaryError::Frame {
        group,
        index,
        reason: e.to_string(),
    }
}

/// Refuses anything but exactly one zstd frame.
fn single_frame(z: &[u8], what: &str) -> Result<(), BinaryError> {
    match zstd::zstd_safe::find_frame_compressed_size(z) {
        Ok(size) if size == z.len() => Ok(()),
        _ => Err(BinaryError::Zstd {
            what: what.to_owned(),
        }),
    }
}

/// Decompresses one zstd frame into exactly `size` bytes (the capacity is the checked size,
/// never more).
fn decompress(z: &[u8], size: usize, what: &str) -> Result<Vec<u8>, BinaryError> {
    let raw = zstd::bulk::decompress(z, size).map_err(|_| BinaryError::Zstd {
        what: what.to_owned(),
    })?;
    if raw.len() != size {
        return Err(BinaryError::SizeMismatch {
            what: what.to_owned(),
            stated: size as u64,
            actual: raw.len(),
        });
    }
    Ok(raw)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::segment::NewFrame;

    const LIMIT: usize = 1 << 20;
    const CAPS: PushLimits = PushLimits::DEFAULT;

    fn str16(out: &mut Vec<u8>, s: &str) {
        out.extend_from_slice(&(s.len() as u16).to_le_bytes());
        out.extend_from_slice(s.as_bytes());
    }

    fn flag4_body() -> Vec<u8> {
        let mut b = b"QPB1\x04".to_vec();
        b.extend_from_slice(&1u32.to_le_bytes());
        str16(&mut b, "q");
        str16(&mut b, "p");
        b.extend_from_slice(&2u32.to_le_bytes());
        for (txn, payload) in [("a", "{\"x\":1}"), ("", "[1]")] {
            str16(&mut b, txn);
            b.extend_from_slice(&(payload.len() as u32).to_le_bytes());
            b.extend_from_slice(payload.as_bytes());
        }
        b
    }

    fn flag8_body() -> (Vec<u8>, Vec<u8>) {
        let mut raw = Vec::new();
        for txn in ["t1", "t2"] {
            NewFrame {
                message_id: Uuid::now_v7(),
                trace_id: None,
                transaction_id: txn,
                producer: None,
                payload: b"{}",
            }
            .encode(&mut raw)
            .unwrap();
        }
        let z = zstd::bulk::compress(&raw, 1).unwrap();
        let mut b = b"QPB1\x08".to_vec();
        b.extend_from_slice(&1u32.to_le_bytes());
        str16(&mut b, "q");
        str16(&mut b, "");
        b.extend_from_slice(&2u32.to_le_bytes());
        b.extend_from_slice(&(z.len() as u32).to_le_bytes());
        b.extend_from_slice(&z);
        (b, z)
    }

    #[test]
    fn a_flag_4_body_decodes_to_items_with_minted_transaction_ids_left_empty() {
        let decoded = decode(&flag4_body(), LIMIT, CAPS).unwrap();
        assert_eq!(decoded.items.len(), 2);
        assert_eq!(decoded.items[0].transaction_id.as_deref(), Some("a"));
        assert_eq!(decoded.items[1].transaction_id, None);
        assert_eq!(decoded.items[1].payload, b"[1]");
        assert!(decoded.prebuilt.is_empty());
    }

    #[test]
    fn a_flag_8_body_keeps_the_group_bytes_and_defaults_an_empty_partition() {
        let (body, z) = flag8_body();
        let decoded = decode(&body, LIMIT, CAPS).unwrap();
        assert_eq!(decoded.prebuilt.len(), 1);
        assert_eq!(decoded.prebuilt[0].bytes, z);
        assert_eq!(decoded.prebuilt[0].message_ids.len(), 2);
        assert_eq!(decoded.items[1].transaction_id.as_deref(), Some("t2"));
        assert_eq!(
            decoded.items[0].partition,
            PartitionName::default_partition()
        );
    }

    #[test]
    fn every_prefix_and_every_flipped_byte_is_an_error_or_a_decode_never_a_panic() {
        for body in [flag4_body(), flag8_body().0] {
            for cut in 0..body.len() {
                assert!(
                    decode(&body[..cut], LIMIT, CAPS).is_err(),
                    "prefix {cut} decoded"
                );
            }
            for at in 0..body.len() {
                for value in [0x00, 0x01, 0x7f, 0x80, 0xff] {
                    let mut mutated = body.clone();
                    mutated[at] = value;
                    let _ = decode(&mutated, LIMIT, CAPS);
                }
            }
        }
    }

    #[test]
    fn a_decompressed_size_over_the_limit_is_refused_before_decompressing() {
        let (body, _) = flag8_body();
        assert!(matches!(
            decode(&body, 10, CAPS),
            Err(BinaryError::TooLarge { limit: 10 })
        ));
    }
}
