//! The JSON pop answer, written directly from the claimed segments.
//!
//! Payloads were validated as JSON on push, so they are copied into the answer as they are
//! stored (no parse, no re-serialisation); only strings are escaped.

use std::io::Write;

use super::echo::Echo;
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
    for slice in &delivery.slices {
        let raw = open_blob(Codec::from_i16(slice.codec)?, &slice.blob)?;
        let frames = slice_frames(&raw, slice.start_idx as usize, slice.take as usize)?;
        let created_at = slice
            .created_at
            .format("%Y-%m-%dT%H:%M:%S%.3fZ")
            .to_string();
        for (k, frame) in frames.iter().enumerate() {
            if !first_message {
                out.push(b',');
            }
            first_message = false;
            let offset = slice.base_offset + i64::from(slice.start_idx) + k as i64;
            write!(out, "{{\"id\":\"{}\",\"transactionId\":", frame.message_id).expect("vec write");
            string(&mut out, frame.transaction_id);
            write!(
                out,
                ",\"partitionId\":\"{}\",\"partition\":",
                slice.partition_id
            )
            .expect("vec write");
            string(&mut out, &slice.partition);
            out.extend_from_slice(b",\"queue\":");
            string(&mut out, &slice.queue);
            out.extend_from_slice(b",\"leaseId\":");
            string(&mut out, &delivery.lease_id);
            out.extend_from_slice(b",\"consumerGroup\":");
            string(&mut out, group);
            out.extend_from_slice(b",\"data\":");
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
                Some(t) => write!(out, ",\"traceId\":\"{t}\"").expect("vec write"),
                None => out.extend_from_slice(b",\"traceId\":null"),
            }
            out.extend_from_slice(b",\"producerSub\":");
            match frame.producer.or(slice.producer.as_deref()) {
                Some(p) => string(&mut out, p),
                None => out.extend_from_slice(b"null"),
            }
            write!(
                out,
                ",\"createdAt\":\"{created_at}\",\"deliveryAttempt\":{},\"offset\":{offset}}}",
                slice.delivery_attempt
            )
            .expect("vec write");
        }
    }
    out.extend_from_slice(b"]}");
    Ok(out)
}

fn string(out: &mut Vec<u8>, s: &str) {
    serde_json::to_writer(&mut *out, s).expect("writing a str to a Vec cannot fail");
}
