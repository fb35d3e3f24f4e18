//! The `QPF1` framed pop answer (wire contract §2.5), written from the claimed segments.
//!
//! Stored blobs ship as they are: one record per segment slice, whole, with the claim's
//! `start`/`end` (inclusive) marking which of its messages this delivery holds, so a claim
//! that starts or ends mid-segment needs no re-slicing. The one exception is a segment with
//! a producer stamped in its row: its frames are rewritten with the producer and shipped raw
//! (codec 0), since the frames of a compressed blob cannot be changed in place.

use crate::log::pop::Delivery;
use crate::segment::{open_blob, BlobError, Codec, FrameIter, NewFrame};

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
    /// A string longer than its `u16` length prefix allows.
    #[error("{0} is longer than 65535 bytes")]
    TooLong(&'static str),
    /// A record longer than its `u32` length allows.
    #[error("segment is larger than 4 GiB")]
    TooLarge,
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
    let mut out = Vec::with_capacity(slices.iter().map(|s| s.blob.len() + 64).sum::<usize>() + 64);
    out.extend_from_slice(MAGIC);
    out.push(VERSION);
    u32_len(&mut out, own_keys.len())?;
    out.extend_from_slice(own_keys);
    let queue = slices.first().map_or("", |s| s.queue.as_str());
    string(&mut out, queue, "queue")?;
    string(&mut out, &delivery.lease_id, "leaseId")?;
    string(&mut out, group, "consumerGroup")?;
    u32_len(&mut out, claims.len())?;

    for claim in claims {
        let (first, last) = (&claim[0], &claim[claim.len() - 1]);
        // start/end are what the slices deliver, exactly as the JSON answer renders them.
        let start = first.base_offset + i64::from(first.start_idx);
        let end = last.base_offset + i64::from(last.start_idx) + i64::from(last.take) - 1;
        out.extend_from_slice(&(first.partition_id as u64).to_le_bytes());
        string(&mut out, &first.partition, "partition")?;
        out.extend_from_slice(&(start as u64).to_le_bytes());
        out.extend_from_slice(&(end as u64).to_le_bytes());
        out.extend_from_slice(&(first.delivery_attempt as u32).to_le_bytes());
        u32_len(&mut out, claim.len())?;
        for slice in claim {
            out.extend_from_slice(&(slice.base_offset as u64).to_le_bytes());
            // timestamptz keeps microseconds, so the record time is the stored one.
            out.extend_from_slice(&slice.created_at.timestamp_micros().to_le_bytes());
            out.extend_from_slice(&(slice.msg_count as u32).to_le_bytes());
            let codec = Codec::from_i16(slice.codec)?;
            match slice.producer.as_deref() {
                None => record(&mut out, codec, &slice.blob)?,
                Some(producer) => {
                    let raw = stamped(codec, &slice.blob, producer)?;
                    record(&mut out, Codec::Raw, &raw)?;
                }
            }
        }
    }
    Ok(out)
}

fn record(out: &mut Vec<u8>, codec: Codec, bytes: &[u8]) -> Result<(), FramedError> {
    out.push(codec.as_i16() as u8);
    u32_len(out, bytes.len())?;
    out.extend_from_slice(bytes);
    Ok(())
}

/// The segment's frames with the row's producer applied where a frame carries none.
fn stamped(codec: Codec, blob: &[u8], producer: &str) -> Result<Vec<u8>, FramedError> {
    let frames = open_blob(codec, blob)?;
    let mut out = Vec::with_capacity(frames.len() + 64);
    for frame in FrameIter::new(&frames) {
        let frame = frame.map_err(BlobError::from)?;
        NewFrame {
            message_id: frame.message_id,
            trace_id: frame.trace_id,
            transaction_id: frame.transaction_id,
            producer: frame.producer.or(Some(producer)),
            payload: frame.payload,
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
