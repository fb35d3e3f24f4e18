//! The `QPF1` framed answer (wire contract §2.5): the one writer of the pop's framed answer
//! and of the framed fetch (`http::reads::fetch_framed`), and the pop's answer built on it.
//!
//! Stored blobs ship as they are: one record per segment, whole, with the claim's
//! `start`/`end` (inclusive) marking which of its messages this answer holds, so a claim
//! that starts or ends mid-segment needs no re-slicing. The exceptions are rewritten to raw
//! frames (codec 0), since the frames of a compressed blob cannot be changed in place: a
//! segment with a producer stamped in its row (its frames get the producer) and a sealed
//! one a caller opens (its frames get their plaintext payloads, see [`opened_frames`]).

use chrono::{DateTime, Utc};

use crate::log::pop::Delivery;
use crate::segment::frame::FLAG_ENCRYPTED;
use crate::segment::{open_blob, BlobError, Codec, FrameIter, NewFrame, PayloadKey, SealError};

/// The framed answer's content type (defined, though not checked, by the clients).
pub const CONTENT_TYPE: &str = "application/x-queen-pop";
/// The magic of a framed answer.
const MAGIC: &[u8; 4] = b"QPF1";
/// Version 1: the own-keys JSON section is present.
const VERSION: u8 = 1;

/// Why a framed answer could not be written.
#[derive(Debug, thiserror::Error)]
pub enum FramedError {
    /// A stored segment could not be opened.
    #[error("stored segment could not be read")]
    Blob(#[from] BlobError),
    /// A sealed payload could not be opened.
    #[error(transparent)]
    Seal(#[from] SealError),
    /// A string longer than its `u16` length prefix allows.
    #[error("{0} is longer than 65535 bytes")]
    TooLong(&'static str),
    /// A record longer than its `u32` length allows.
    #[error("segment is larger than 4 GiB")]
    TooLarge,
}

/// What precedes the claims: the own-keys JSON object (or empty) and the answer's identity.
pub struct Header<'a> {
    /// The JSON object of the answer's keys besides its messages, or empty.
    pub own_keys: &'a [u8],
    /// The queue of the claims.
    pub queue: &'a str,
    /// The lease of the claims (empty without one).
    pub lease_id: &'a str,
    /// The consumer group (empty without one).
    pub group: &'a str,
    /// How many claims follow.
    pub claims: usize,
}

/// A claim's head: one partition's delivered offsets `start..=end` and how many records
/// (stored segments) follow it.
pub struct ClaimHead<'a> {
    /// The partition's id.
    pub partition_id: i64,
    /// The partition's name.
    pub partition: &'a str,
    /// First delivered offset.
    pub start: i64,
    /// Last delivered offset (inclusive).
    pub end: i64,
    /// The delivery attempt (0 where there is no lease).
    pub delivery_attempt: i32,
    /// How many records follow.
    pub records: usize,
}

/// A record's head: the stored segment's offsets and time.
pub struct RecordHead {
    /// Offset of its first message.
    pub base_offset: i64,
    /// When the push that wrote it was stored (timestamptz keeps microseconds, so the
    /// record time is the stored one).
    pub created_at: DateTime<Utc>,
    /// Messages it holds.
    pub msg_count: i32,
}

/// A `QPF1` body being written: [`Writer::new`] with the header, then per claim
/// [`Writer::claim`] followed by its [`Writer::record`]s, then [`Writer::finish`]. The
/// caller writes as many claims and records as it announced.
pub struct Writer {
    out: Vec<u8>,
}

impl Writer {
    /// Starts a body with room for `capacity` bytes.
    pub fn new(capacity: usize, header: &Header<'_>) -> Result<Self, FramedError> {
        let mut out = Vec::with_capacity(capacity + header.own_keys.len() + 64);
        out.extend_from_slice(MAGIC);
        out.push(VERSION);
        u32_len(&mut out, header.own_keys.len())?;
        out.extend_from_slice(header.own_keys);
        string(&mut out, header.queue, "queue")?;
        string(&mut out, header.lease_id, "leaseId")?;
        string(&mut out, header.group, "consumerGroup")?;
        u32_len(&mut out, header.claims)?;
        Ok(Writer { out })
    }

    /// Starts a claim.
    pub fn claim(&mut self, head: &ClaimHead<'_>) -> Result<(), FramedError> {
        let out = &mut self.out;
        out.extend_from_slice(&(head.partition_id as u64).to_le_bytes());
        string(out, head.partition, "partition")?;
        out.extend_from_slice(&(head.start as u64).to_le_bytes());
        out.extend_from_slice(&(head.end as u64).to_le_bytes());
        out.extend_from_slice(&(head.delivery_attempt as u32).to_le_bytes());
        u32_len(out, head.records)
    }

    /// Appends a record of the current claim: `bytes` are the segment in `codec`.
    pub fn record(
        &mut self,
        head: &RecordHead,
        codec: Codec,
        bytes: &[u8],
    ) -> Result<(), FramedError> {
        let out = &mut self.out;
        out.extend_from_slice(&(head.base_offset as u64).to_le_bytes());
        out.extend_from_slice(&head.created_at.timestamp_micros().to_le_bytes());
        out.extend_from_slice(&(head.msg_count as u32).to_le_bytes());
        out.push(codec.as_i16() as u8);
        u32_len(out, bytes.len())?;
        out.extend_from_slice(bytes);
        Ok(())
    }

    /// The finished body.
    pub fn finish(self) -> Vec<u8> {
        self.out
    }
}

/// Writes a delivery as a `QPF1` body. Slices of one partition are consecutive in a
/// delivery, and each run of them becomes one claim.
/// `own_keys` is the JSON object of what the JSON answer would carry besides its messages
/// (the echoes), or empty.
pub fn framed_answer(
    delivery: &Delivery,
    group: &str,
    own_keys: &[u8],
) -> Result<Vec<u8>, FramedError> {
    let slices = &delivery.slices;
    let claims: Vec<&[_]> = slices
        .chunk_by(|a, b| a.partition_id == b.partition_id)
        .collect();
    let header = Header {
        own_keys,
        queue: slices.first().map_or("", |s| s.queue.as_str()),
        lease_id: &delivery.lease_id,
        group,
        claims: claims.len(),
    };
    let mut writer = Writer::new(
        slices.iter().map(|s| s.blob.len() + 64).sum::<usize>(),
        &header,
    )?;
    for claim in claims {
        let (first, last) = (&claim[0], &claim[claim.len() - 1]);
        // start/end are what the slices deliver, exactly as the JSON answer renders them.
        writer.claim(&ClaimHead {
            partition_id: first.partition_id,
            partition: &first.partition,
            start: first.base_offset + i64::from(first.start_idx),
            end: last.base_offset + i64::from(last.start_idx) + i64::from(last.take) - 1,
            delivery_attempt: first.delivery_attempt,
            records: claim.len(),
        })?;
        for slice in claim {
            let head = RecordHead {
                base_offset: slice.base_offset,
                created_at: slice.created_at,
                msg_count: slice.msg_count,
            };
            let codec = Codec::from_i16(slice.codec)?;
            match slice.producer.as_deref() {
                None => writer.record(&head, codec, &slice.blob)?,
                Some(producer) => {
                    let raw = rewritten(codec, &slice.blob, Some(producer), None)?;
                    writer.record(&head, Codec::Raw, &raw)?;
                }
            }
        }
    }
    Ok(writer.finish())
}

/// The raw frames (codec 0) of a sealed segment with every payload opened with `key`: a
/// framed answer never ships ciphertext (the clients refuse frame flag 4).
pub fn opened_frames(
    codec: Codec,
    blob: &[u8],
    key: Option<&PayloadKey>,
) -> Result<Vec<u8>, FramedError> {
    rewritten(codec, blob, None, Some(key.ok_or(SealError::Unopenable)?))
}

/// The segment's frames re-encoded: the row's `producer` applied where a frame carries
/// none, and sealed payloads opened with `key` when one is given.
fn rewritten(
    codec: Codec,
    blob: &[u8],
    producer: Option<&str>,
    key: Option<&PayloadKey>,
) -> Result<Vec<u8>, FramedError> {
    let frames = open_blob(codec, blob)?;
    let mut out = Vec::with_capacity(frames.len() + 64);
    for frame in FrameIter::new(&frames) {
        let frame = frame.map_err(BlobError::from)?;
        let opened;
        let payload = match key {
            Some(key) if frame.flags & FLAG_ENCRYPTED != 0 => {
                opened = key.open(&frame.message_id, frame.payload)?;
                opened.as_slice()
            }
            _ => frame.payload,
        };
        NewFrame {
            message_id: frame.message_id,
            trace_id: frame.trace_id,
            transaction_id: frame.transaction_id,
            producer: frame.producer.or(producer),
            payload,
        }
        .encode(&mut out)
        .map_err(BlobError::from)?;
    }
    Ok(out)
}

fn string(out: &mut Vec<u8>, s: &str, field: &'static str) -> Result<(), FramedError> {
    let len = u16::try_from(s.len()).map_err(|_| FramedError::TooLong(field))?;
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(s.as_bytes());
    Ok(())
}

fn u32_len(out: &mut Vec<u8>, n: usize) -> Result<(), FramedError> {
    let n = u32::try_from(n).map_err(|_| FramedError::TooLarge)?;
    out.extend_from_slice(&n.to_le_bytes());
    Ok(())
}

#[cfg(test)]
mod tests {
    use chrono::{TimeZone, Utc};
    use uuid::Uuid;

    use super::*;
    use crate::db::pop::ClaimedSlice;
    use crate::segment::SegmentBuilder;

    fn slice(producer: Option<&str>) -> (ClaimedSlice, Vec<u8>) {
        let mut builder = SegmentBuilder::new();
        for txn in ["a", "b", "c"] {
            builder
                .push(&NewFrame {
                    message_id: Uuid::now_v7(),
                    trace_id: None,
                    transaction_id: txn,
                    producer: None,
                    payload: b"{}",
                })
                .unwrap();
        }
        let blob = builder.finish(1).unwrap();
        let slice = ClaimedSlice {
            queue: "q".into(),
            partition: "p".into(),
            partition_id: 7,
            delivery_attempt: 2,
            claim_start: 11,
            claim_end: 12,
            base_offset: 10,
            start_idx: 1,
            take: 2,
            msg_count: 3,
            created_at: Utc.timestamp_micros(1_700_000_000_123_456).unwrap(),
            codec: blob.codec.as_i16(),
            producer: producer.map(str::to_owned),
            blob: blob.bytes.clone(),
        };
        (slice, blob.bytes)
    }

    /// Offset of the first record's codec byte in a one-claim answer for queue "q",
    /// partition "p", lease "L" and group "G".
    const CODEC_AT: usize = 4 + 1 + 4 + (2 + 1) + (2 + 1) + (2 + 1) + 4 // header, identity
        + 8 + (2 + 1) + 8 + 8 + 4 + 4 // claim
        + 8 + 8 + 4; // record before its codec

    #[test]
    fn a_slice_ships_its_whole_blob_with_start_and_end_marking_the_delivered_part() {
        let (slice, bytes) = slice(None);
        let delivery = Delivery {
            lease_id: "L".into(),
            slices: vec![slice],
        };
        let out = framed_answer(&delivery, "G", b"").unwrap();
        assert_eq!(&out[..5], b"QPF1\x01");
        let claim = 4 + 1 + 4 + 3 + 3 + 3 + 4;
        assert_eq!(out[claim..claim + 8], 7u64.to_le_bytes());
        let start = claim + 8 + 3;
        assert_eq!(out[start..start + 8], 11u64.to_le_bytes());
        assert_eq!(out[start + 8..start + 16], 12u64.to_le_bytes());
        let record = start + 16 + 8;
        assert_eq!(out[record..record + 8], 10u64.to_le_bytes());
        assert_eq!(
            out[record + 8..record + 16],
            1_700_000_000_123_456i64.to_le_bytes()
        );
        assert_eq!(out[CODEC_AT], 1);
        assert_eq!(&out[CODEC_AT + 5..], &bytes[..]);
    }

    #[test]
    fn a_sealed_segment_opens_to_raw_plaintext_frames_and_needs_the_key() {
        let key = PayloadKey::from_hex(&"ab".repeat(32)).unwrap();
        let mut builder = SegmentBuilder::new();
        let ids: Vec<Uuid> = (0..2).map(|_| Uuid::now_v7()).collect();
        for (id, payload) in ids.iter().zip([&b"{\"s\":1}"[..], b"[2]"]) {
            let sealed = key.seal(id, payload);
            builder
                .push_sealed(&NewFrame {
                    message_id: *id,
                    trace_id: None,
                    transaction_id: "t",
                    producer: None,
                    payload: &sealed,
                })
                .unwrap();
        }
        let blob = builder.finish(1).unwrap();
        assert_eq!(blob.codec, Codec::SealedZstd);

        let raw = opened_frames(blob.codec, &blob.bytes, Some(&key)).unwrap();
        let frames: Vec<_> = FrameIter::new(&raw).collect::<Result<_, _>>().unwrap();
        assert!(frames.iter().all(|f| f.flags & FLAG_ENCRYPTED == 0));
        let payloads: Vec<&[u8]> = frames.iter().map(|f| f.payload).collect();
        assert_eq!(payloads, [&b"{\"s\":1}"[..], b"[2]"]);
        assert_eq!(frames[1].message_id, ids[1]);
        assert!(matches!(
            opened_frames(blob.codec, &blob.bytes, None),
            Err(FramedError::Seal(_))
        ));
    }

    #[test]
    fn a_segment_with_a_stamped_producer_ships_raw_frames_carrying_it() {
        let (slice, _) = slice(Some("alice"));
        let delivery = Delivery {
            lease_id: "L".into(),
            slices: vec![slice],
        };
        let out = framed_answer(&delivery, "G", b"").unwrap();
        assert_eq!(out[CODEC_AT], 0);
        let frames: Vec<_> = FrameIter::new(&out[CODEC_AT + 5..])
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(frames.len(), 3);
        assert!(frames.iter().all(|f| f.producer == Some("alice")));
        assert_eq!(frames[2].transaction_id, "c");
    }
}
