//! The JSON pop answer, written directly from the claimed segments.
//!
//! Payloads were validated as JSON on push, so they are copied into the answer as they are
//! stored (no parse, no re-serialisation); only strings are escaped.

use std::io::Write;

use super::echo::Echo;
use crate::http::json_out::string;
use crate::log::pop::Delivery;
use crate::segment::frame::FLAG_ENCRYPTED;
use crate::segment::{open_blob, slice_frames, Codec, PayloadKey, SealError};

/// Why a delivery could not be rendered: a stored segment that does not read back, or an
/// encrypted payload this node cannot open.
pub type RenderError = Box<dyn std::error::Error + Send + Sync>;

/// Renders a delivery as the contract's JSON object, with the echoes the request asked for.
/// Encrypted payloads (frame flag 4) are opened with `key` first.
pub fn json_answer(
    delivery: &Delivery,
    group: &str,
    echo: &Echo,
    key: Option<&PayloadKey>,
) -> Result<Vec<u8>, RenderError> {
    let first = delivery
        .slices
        .first()
        .expect("a delivery holds at least one slice");
    let mut out = Vec::with_capacity(
        delivery
            .slices
            .iter()
            .map(|s| s.blob.len() * 4)
            .sum::<usize>()
            + 256,
    );
    let mut partitions_claimed = 0usize;
    let mut last_partition = None;
    for s in &delivery.slices {
        if last_partition != Some(s.partition_id) {
            partitions_claimed += 1;
            last_partition = Some(s.partition_id);
        }
    }

    out.extend_from_slice(b"{\"success\":true,\"queue\":");
    string(&mut out, &first.queue);
    out.extend_from_slice(b",\"partition\":");
    string(&mut out, &first.partition);
    write!(
        out,
        ",\"partitionId\":\"{}\",\"leaseId\":",
        first.partition_id
    )
    .expect("vec write");
    string(&mut out, &delivery.lease_id);
    out.extend_from_slice(b",\"consumerGroup\":");
    string(&mut out, group);
    write!(out, ",\"partitionsClaimed\":{partitions_claimed}").expect("vec write");
    echo.write_keys(&mut out);
    out.extend_from_slice(b",\"messages\":[");

    let mut first_message = true;
    let mut ids = itoa::Buffer::new();
    let mut uuid = uuid::Uuid::encode_buffer();
    for slice in &delivery.slices {
        let raw = open_blob(Codec::from_i16(slice.codec)?, &slice.blob)?;
        let frames = slice_frames(&raw, slice.start_idx as usize, slice.take as usize)?;
        // What every message of the slice repeats, escaped once per slice instead of once
        // per message: from `partitionId` to `data`'s key, and the tail up to `offset`'s.
        let mut middle = Vec::with_capacity(256);
        write!(
            middle,
            ",\"partitionId\":\"{}\",\"partition\":",
            slice.partition_id
        )
        .expect("vec write");
        string(&mut middle, &slice.partition);
        middle.extend_from_slice(b",\"queue\":");
        string(&mut middle, &slice.queue);
        middle.extend_from_slice(b",\"leaseId\":");
        string(&mut middle, &delivery.lease_id);
        middle.extend_from_slice(b",\"consumerGroup\":");
        string(&mut middle, group);
        middle.extend_from_slice(b",\"data\":");
        let mut tail = Vec::with_capacity(64);
        write!(
            tail,
            ",\"createdAt\":\"{}\",\"deliveryAttempt\":{},\"offset\":",
            slice.created_at.format("%Y-%m-%dT%H:%M:%S%.3fZ"),
            slice.delivery_attempt
        )
        .expect("vec write");
        for (k, frame) in frames.iter().enumerate() {
            if !first_message {
                out.push(b',');
            }
            first_message = false;
            let offset = slice.base_offset + i64::from(slice.start_idx) + k as i64;
            out.extend_from_slice(b"{\"id\":\"");
            out.extend_from_slice(
                frame
                    .message_id
                    .hyphenated()
                    .encode_lower(&mut uuid)
                    .as_bytes(),
            );
            out.extend_from_slice(b"\",\"transactionId\":");
            string(&mut out, frame.transaction_id);
            out.extend_from_slice(&middle);
            let opened;
            let payload = if frame.flags & FLAG_ENCRYPTED != 0 {
                let key = key.ok_or(SealError::Unopenable)?;
                opened = key.open(&frame.message_id, frame.payload)?;
                opened.as_slice()
            } else {
                frame.payload
            };
            if payload.is_empty() {
                out.extend_from_slice(b"null");
            } else {
                out.extend_from_slice(payload);
            }
            match frame.trace_id {
                Some(t) => {
                    out.extend_from_slice(b",\"traceId\":\"");
                    out.extend_from_slice(t.hyphenated().encode_lower(&mut uuid).as_bytes());
                    out.push(b'"');
                }
                None => out.extend_from_slice(b",\"traceId\":null"),
            }
            out.extend_from_slice(b",\"producerSub\":");
            match frame.producer.or(slice.producer.as_deref()) {
                Some(p) => string(&mut out, p),
                None => out.extend_from_slice(b"null"),
            }
            out.extend_from_slice(&tail);
            out.extend_from_slice(ids.format(offset).as_bytes());
            out.push(b'}');
        }
    }
    out.extend_from_slice(b"]}");
    Ok(out)
}

#[cfg(test)]
mod tests {
    use chrono::{TimeZone, Utc};
    use serde_json::{json, Value};
    use uuid::Uuid;

    use super::*;
    use crate::db::pop::ClaimedSlice;
    use crate::segment::{NewFrame, SegmentBuilder};

    fn slice(partition: &str, id: i64, base: i64, frames: &[NewFrame<'_>]) -> ClaimedSlice {
        let mut builder = SegmentBuilder::new();
        for f in frames {
            builder.push(f).unwrap();
        }
        let blob = builder.finish(1).unwrap();
        ClaimedSlice {
            queue: "q\"1".to_owned(),
            partition: partition.to_owned(),
            partition_id: id,
            delivery_attempt: 2,
            claim_start: base + 1,
            claim_end: base + frames.len() as i64 - 1,
            base_offset: base,
            start_idx: 1,
            take: frames.len() as i32 - 1,
            msg_count: frames.len() as i32,
            created_at: Utc.timestamp_millis_opt(1_700_000_000_123).unwrap(),
            codec: blob.codec.as_i16(),
            producer: Some("slice-producer".to_owned()),
            blob: blob.bytes,
        }
    }

    #[test]
    fn every_message_carries_its_own_fields_and_its_slice_s_escaped_ones() {
        let ids: Vec<Uuid> = (0..5).map(|_| Uuid::now_v7()).collect();
        let trace = Uuid::now_v7();
        let frame = |k: usize, txn: &'static str, payload: &'static [u8]| NewFrame {
            message_id: ids[k],
            trace_id: (k == 2).then_some(trace),
            transaction_id: txn,
            producer: (k == 4).then_some("frame-producer"),
            payload,
        };
        let delivery = Delivery {
            lease_id: "lease-1".to_owned(),
            slices: vec![
                slice(
                    "p\\a",
                    7,
                    10,
                    &[
                        frame(0, "t0", b"0"),
                        frame(1, "t\"1", b"{\"a\":1}"),
                        frame(2, "t2", b""),
                    ],
                ),
                slice("p2", 8, 40, &[frame(3, "t3", b"3"), frame(4, "t4", b"[4]")]),
            ],
        };

        let out = json_answer(&delivery, "g", &Echo::default(), None).unwrap();

        let answer: Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(answer["partitionId"], "7");
        assert_eq!(answer["partitionsClaimed"], 2);
        let message = |k: usize, txn: &str, partition: &str, id: &str, offset: i64| {
            json!({
                "id": ids[k].to_string(), "transactionId": txn, "partitionId": id,
                "partition": partition, "queue": "q\"1", "leaseId": "lease-1",
                "consumerGroup": "g",
                "data": serde_json::from_slice::<Value>(match k {
                    1 => b"{\"a\":1}", 2 => b"null", 4 => b"[4]", _ => b"0" }).unwrap(),
                "traceId": if k == 2 { json!(trace.to_string()) } else { Value::Null },
                "producerSub": if k == 4 { "frame-producer" } else { "slice-producer" },
                "createdAt": "2023-11-14T22:13:20.123Z", "deliveryAttempt": 2,
                "offset": offset,
            })
        };
        assert_eq!(
            answer["messages"],
            json!([
                message(1, "t\"1", "p\\a", "7", 11),
                message(2, "t2", "p\\a", "7", 12),
                message(4, "t4", "p2", "8", 41),
            ])
        );
    }
}
