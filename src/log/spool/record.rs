//! One spooled push as bytes: the record format of the spool's files.
//!
//! A record is framed as `u32 length | u32 CRC-32 of the body | body` (little-endian), so a
//! reader tells a whole record from a torn tail (a write cut short by a crash: the length
//! runs past the end of the file) and from damaged bytes (the CRC disagrees). Only records
//! whose `fsync` completed were ever acknowledged, so dropping a torn tail drops nothing a
//! client was told was buffered.
//!
//! The body holds what a replay needs: the tenant, a table of the push's (queue, partition)
//! pairs (so names are shared by the items that carry them when read back), and per item
//! its pair, the message id and the transaction id it was answered with, its trace id and
//! producer, and its payload:
//!
//! ```text
//! u8 version (1) | str16 tenant | u32 pairs × (str16 queue, str16 partition)
//! | u32 items × (u32 pair | [16] message id | str16 transaction id | u8 flags
//!                | [16] trace id (flag 1) | str16 producer (flag 2) | str32 payload)
//! ```
//!
//! It leaves files, their header and their order to `files`.

use std::collections::HashMap;
use std::sync::Arc;

use uuid::Uuid;

use crate::domain::{PartitionName, PushItem, QueueName, Tenant};

/// Bytes of a record's frame before its body: length and CRC.
pub const FRAME_HEADER: usize = 8;
/// The largest body a reader accepts: anything longer is damage, not a push (a push body
/// is capped far below this by `QUEEN_MAX_BODY_BYTES`).
pub const MAX_BODY: usize = 1 << 30;

const VERSION: u8 = 1;
const HAS_TRACE: u8 = 1;
const HAS_PRODUCER: u8 = 2;

/// A push read back from the spool.
#[derive(Debug, Clone)]
pub struct Record {
    /// Whose push it is.
    pub tenant: Tenant,
    /// Its items, each with the transaction id it was answered with.
    pub items: Vec<PushItem>,
    /// The message id each item was answered with, in item order.
    pub message_ids: Vec<Uuid>,
}

/// Why bytes are not a record.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RecordError {
    /// The frame runs past the end of the bytes: a write cut short.
    #[error("torn record: {needed} bytes needed, {have} there")]
    Torn {
        /// Bytes the frame says it needs.
        needed: usize,
        /// Bytes there are.
        have: usize,
    },
    /// The body does not match its CRC, or its length is impossible.
    #[error("damaged record: {0}")]
    Damaged(&'static str),
    /// A field does not fit the format (an item of the push is too large).
    #[error("push cannot be spooled: {0}")]
    TooLarge(&'static str),
}

/// A push framed as one record, ready to append.
pub fn encode(
    tenant: &Tenant,
    items: &[PushItem],
    message_ids: &[Uuid],
    transaction_ids: &[String],
) -> Result<Vec<u8>, RecordError> {
    let mut pairs: HashMap<(&QueueName, &PartitionName), u32> = HashMap::new();
    let mut table: Vec<(&QueueName, &PartitionName)> = Vec::new();
    let mut pair_of = Vec::with_capacity(items.len());
    for item in items {
        let next = table.len() as u32;
        let k = *pairs.entry((&item.queue, &item.partition)).or_insert(next);
        if k == next {
            table.push((&item.queue, &item.partition));
        }
        pair_of.push(k);
    }
    let size: usize = items
        .iter()
        .zip(transaction_ids)
        .map(|(i, t)| 48 + t.len() + i.payload.len() + i.producer.as_ref().map_or(0, |p| p.len()))
        .sum();
    let mut out = Vec::with_capacity(FRAME_HEADER + 16 + size + table.len() * 64);
    out.extend_from_slice(&[0; FRAME_HEADER]);
    out.push(VERSION);
    put_str16(&mut out, tenant.as_str())?;
    out.extend_from_slice(&(table.len() as u32).to_le_bytes());
    for (queue, partition) in &table {
        put_str16(&mut out, queue.as_str())?;
        put_str16(&mut out, partition.as_str())?;
    }
    out.extend_from_slice(&(items.len() as u32).to_le_bytes());
    for (k, item) in items.iter().enumerate() {
        out.extend_from_slice(&pair_of[k].to_le_bytes());
        out.extend_from_slice(message_ids[k].as_bytes());
        put_str16(&mut out, &transaction_ids[k])?;
        let flags = if item.trace_id.is_some() {
            HAS_TRACE
        } else {
            0
        } | if item.producer.is_some() {
            HAS_PRODUCER
        } else {
            0
        };
        out.push(flags);
        if let Some(trace) = item.trace_id {
            out.extend_from_slice(trace.as_bytes());
        }
        if let Some(producer) = &item.producer {
            // The stored frame's limit too: a push that could never be stored is refused
            // now, not dropped at its replay.
            put_str16(&mut out, producer)?;
        }
        put_bytes32(&mut out, &item.payload)?;
    }
    let body_len = out.len() - FRAME_HEADER;
    if body_len > MAX_BODY {
        return Err(RecordError::TooLarge(
            "the push is larger than a record may be",
        ));
    }
    let crc = crc32fast::hash(&out[FRAME_HEADER..]);
    out[0..4].copy_from_slice(&(body_len as u32).to_le_bytes());
    out[4..8].copy_from_slice(&crc.to_le_bytes());
    Ok(out)
}

/// The body of the record at the start of `bytes` and the frame's whole length, or `None`
/// when `bytes` is empty (a clean end).
pub fn frame(bytes: &[u8]) -> Result<Option<(&[u8], usize)>, RecordError> {
    if bytes.is_empty() {
        return Ok(None);
    }
    if bytes.len() < FRAME_HEADER {
        return Err(RecordError::Torn {
            needed: FRAME_HEADER,
            have: bytes.len(),
        });
    }
    let len = u32::from_le_bytes(bytes[0..4].try_into().expect("4 bytes")) as usize;
    let crc = u32::from_le_bytes(bytes[4..8].try_into().expect("4 bytes"));
    if len > MAX_BODY {
        return Err(RecordError::Damaged("length out of range"));
    }
    let total = FRAME_HEADER + len;
    if bytes.len() < total {
        return Err(RecordError::Torn {
            needed: total,
            have: bytes.len(),
        });
    }
    let body = &bytes[FRAME_HEADER..total];
    if crc32fast::hash(body) != crc {
        return Err(RecordError::Damaged("CRC mismatch"));
    }
    Ok(Some((body, total)))
}

/// Reads a body that passed its CRC.
pub fn decode(body: &[u8]) -> Result<Record, RecordError> {
    let mut r = Reader {
        bytes: body,
        pos: 0,
    };
    if r.u8()? != VERSION {
        return Err(RecordError::Damaged("unknown record version"));
    }
    let tenant = Tenant::from_stored(r.str16()?);
    let pair_count = r.u32()? as usize;
    let mut table = Vec::with_capacity(pair_count.min(r.left() / 4));
    for _ in 0..pair_count {
        let queue = QueueName::parse(r.str16()?).map_err(|_| bad("queue name"))?;
        let partition = PartitionName::parse(r.str16()?).map_err(|_| bad("partition name"))?;
        table.push((queue, partition));
    }
    let count = r.u32()? as usize;
    // An item takes at least 27 bytes: no count can make the vectors outgrow the body.
    let cap = count.min(r.left() / 27);
    let (mut items, mut message_ids) = (Vec::with_capacity(cap), Vec::with_capacity(cap));
    for _ in 0..count {
        let pair = r.u32()? as usize;
        let (queue, partition) = table.get(pair).ok_or_else(|| bad("pair index"))?;
        message_ids.push(Uuid::from_bytes(r.array()?));
        let transaction_id = r.str16()?;
        let flags = r.u8()?;
        let trace_id = match flags & HAS_TRACE {
            0 => None,
            _ => Some(Uuid::from_bytes(r.array()?)),
        };
        let producer = match flags & HAS_PRODUCER {
            0 => None,
            _ => Some(Arc::<str>::from(r.str16()?)),
        };
        items.push(PushItem {
            queue: queue.clone(),
            partition: partition.clone(),
            payload: r.bytes32()?.to_vec(),
            transaction_id: Some(transaction_id),
            trace_id,
            producer,
        });
    }
    if r.left() != 0 {
        return Err(bad("bytes after the last item"));
    }
    Ok(Record {
        tenant,
        items,
        message_ids,
    })
}

fn bad(what: &'static str) -> RecordError {
    RecordError::Damaged(what)
}

fn put_str16(out: &mut Vec<u8>, s: &str) -> Result<(), RecordError> {
    let len = u16::try_from(s.len()).map_err(|_| RecordError::TooLarge("a name or id"))?;
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(s.as_bytes());
    Ok(())
}

fn put_bytes32(out: &mut Vec<u8>, b: &[u8]) -> Result<(), RecordError> {
    let len = u32::try_from(b.len()).map_err(|_| RecordError::TooLarge("a payload"))?;
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(b);
    Ok(())
}

/// A bounds-checked cursor: every read past the end is a [`RecordError::Damaged`].
struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn left(&self) -> usize {
        self.bytes.len() - self.pos
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], RecordError> {
        if self.left() < n {
            return Err(bad("field runs past the body"));
        }
        let out = &self.bytes[self.pos..self.pos + n];
        self.pos += n;
        Ok(out)
    }

    fn u8(&mut self) -> Result<u8, RecordError> {
        Ok(self.take(1)?[0])
    }

    fn u32(&mut self) -> Result<u32, RecordError> {
        Ok(u32::from_le_bytes(self.array()?))
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], RecordError> {
        Ok(self.take(N)?.try_into().expect("N bytes"))
    }

    fn str16(&mut self) -> Result<String, RecordError> {
        let len = u16::from_le_bytes(self.array()?) as usize;
        let raw = self.take(len)?;
        String::from_utf8(raw.to_vec()).map_err(|_| bad("text is not UTF-8"))
    }

    fn bytes32(&mut self) -> Result<&'a [u8], RecordError> {
        let len = self.u32()? as usize;
        self.take(len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(queue: &str, partition: &str, payload: &str, producer: Option<&str>) -> PushItem {
        PushItem {
            queue: QueueName::parse(queue).unwrap(),
            partition: PartitionName::parse(partition).unwrap(),
            payload: payload.as_bytes().to_vec(),
            transaction_id: None,
            trace_id: producer.map(|_| Uuid::now_v7()),
            producer: producer.map(Arc::from),
        }
    }

    fn sample() -> (Vec<PushItem>, Vec<Uuid>, Vec<String>, Vec<u8>) {
        let items = vec![
            item("orders", "eu", r#"{"n":1}"#, None),
            item("orders", "us", r#"{"n":2}"#, Some("alice")),
            item("orders", "eu", r#"{"n":3}"#, None),
        ];
        let ids: Vec<Uuid> = items.iter().map(|_| Uuid::now_v7()).collect();
        let txns: Vec<String> = vec!["t1".into(), ids[1].to_string(), "t3".into()];
        let bytes = encode(&Tenant::from_stored("acme"), &items, &ids, &txns).unwrap();
        (items, ids, txns, bytes)
    }

    #[test]
    fn a_record_reads_back_as_it_was_written() {
        let (items, ids, txns, bytes) = sample();
        let (body, len) = frame(&bytes).unwrap().unwrap();
        assert_eq!(len, bytes.len());
        let record = decode(body).unwrap();
        assert_eq!(record.tenant.as_str(), "acme");
        assert_eq!(record.message_ids, ids);
        for ((got, want), txn) in record.items.iter().zip(&items).zip(&txns) {
            assert_eq!(got.queue, want.queue);
            assert_eq!(got.partition, want.partition);
            assert_eq!(got.payload, want.payload);
            assert_eq!(got.trace_id, want.trace_id);
            assert_eq!(got.producer, want.producer);
            assert_eq!(got.transaction_id.as_deref(), Some(txn.as_str()));
        }
    }

    #[test]
    fn a_torn_tail_is_told_apart_from_a_clean_end_at_every_cut() {
        let (_, _, _, bytes) = sample();
        assert_eq!(frame(&[]), Ok(None));
        for cut in 1..bytes.len() {
            assert!(
                matches!(frame(&bytes[..cut]), Err(RecordError::Torn { .. })),
                "cut at {cut}"
            );
        }
        let mut two = bytes.clone();
        two.extend_from_slice(&bytes[..bytes.len() / 2]);
        let (_, first) = frame(&two).unwrap().unwrap();
        assert!(matches!(
            frame(&two[first..]),
            Err(RecordError::Torn { .. })
        ));
    }

    #[test]
    fn a_flipped_bit_anywhere_in_the_body_fails_the_crc() {
        let (_, _, _, bytes) = sample();
        for at in FRAME_HEADER..bytes.len() {
            let mut damaged = bytes.clone();
            damaged[at] ^= 0x10;
            assert_eq!(
                frame(&damaged),
                Err(RecordError::Damaged("CRC mismatch")),
                "bit flipped at {at}"
            );
        }
        let mut bad_crc = bytes.clone();
        bad_crc[5] ^= 1;
        assert_eq!(frame(&bad_crc), Err(RecordError::Damaged("CRC mismatch")));
    }

    #[test]
    fn a_push_the_stored_format_cannot_hold_is_refused_when_spooled() {
        let long = "x".repeat(70_000);
        let items = vec![item("orders", "eu", "1", Some(&long))];
        let ids = vec![Uuid::now_v7()];
        let refused = encode(&Tenant::default_tenant(), &items, &ids, &["t".to_owned()]);
        assert!(matches!(refused, Err(RecordError::TooLarge(_))));
    }

    #[test]
    fn an_impossible_length_is_damage_not_an_allocation() {
        let mut bytes = vec![0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0];
        bytes.extend_from_slice(&[0; 16]);
        assert_eq!(
            frame(&bytes),
            Err(RecordError::Damaged("length out of range"))
        );
    }

    #[test]
    fn a_body_that_lies_about_its_counts_is_refused_without_panicking() {
        let (_, _, _, bytes) = sample();
        let body = &bytes[FRAME_HEADER..];
        for cut in 0..body.len() {
            assert!(decode(&body[..cut]).is_err(), "cut at {cut}");
        }
        let mut huge = vec![VERSION, 0, 0];
        huge.extend_from_slice(&0u32.to_le_bytes());
        huge.extend_from_slice(&u32::MAX.to_le_bytes());
        assert!(decode(&huge).is_err());
    }
}
