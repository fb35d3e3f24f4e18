//! The answer of `POST /api/v1/fetch`, written from the stored segments: one entry per
//! asked entry, in order, each with its watermarks, and records contiguous and ascending
//! from the asked offset while the byte budgets last.
//!
//! A record's size is the length of its rendered JSON object; an entry stops at the first
//! record that would take it past its own budget or the call's, except the call's very
//! first record, which is always delivered (the published client ends a read at a call
//! that delivered nothing, so a record larger than every budget would otherwise never be
//! read).

use std::io::Write;

use super::fetch_request::{FetchEntry, FetchRequest};
use crate::db::reads::fetch::FetchedEntry;
use crate::http::json_out::{number, string};
use crate::segment::frame::FLAG_ENCRYPTED;
use crate::segment::{open_blob, slice_frames, Codec, PayloadKey, SealError};

/// Why stored data could not be rendered: a segment that does not read back, an encrypted
/// payload this node cannot open, or a database answer that does not match the call.
pub type RenderError = Box<dyn std::error::Error + Send + Sync>;

/// The entry-level error of an offset outside `logStartOffset..=highWatermark`.
pub const OUT_OF_RANGE: &str = "OFFSET_OUT_OF_RANGE";
/// The entry-level error of a queue the tenant does not have.
pub const UNKNOWN: &str = "UNKNOWN_TOPIC_OR_PARTITION";

/// Renders the answer body.
pub fn answer(
    request: &FetchRequest,
    fetched: &[FetchedEntry],
    key: Option<&PayloadKey>,
) -> Result<Vec<u8>, RenderError> {
    one_per_entry(request, fetched)?;
    let mut out = Vec::with_capacity(
        fetched
            .iter()
            .flat_map(|e| &e.segments)
            .map(|s| s.blob.len() * 4)
            .sum::<usize>()
            + 128 * fetched.len()
            + 16,
    );
    let mut budget = Budget {
        call_left: request.max_bytes,
        delivered: false,
    };
    out.extend_from_slice(b"{\"entries\":[");
    for (i, (ask, got)) in request.entries.iter().zip(fetched).enumerate() {
        if i > 0 {
            out.push(b',');
        }
        entry_head(&mut out, ask, got);
        if let Some(error) = entry_error(ask.offset, got) {
            out.extend_from_slice(b",\"error\":");
            string(&mut out, error);
            out.extend_from_slice(b",\"records\":[]}");
            continue;
        }
        out.extend_from_slice(b",\"records\":[");
        let next = records(&mut out, ask.offset, ask.max_bytes, got, &mut budget, key)?;
        out.extend_from_slice(b"],\"nextOffset\":");
        number(&mut out, next);
        out.push(b'}');
    }
    out.extend_from_slice(b"]}");
    Ok(out)
}

/// Refuses a database answer with other than one entry per asked entry.
pub fn one_per_entry(request: &FetchRequest, fetched: &[FetchedEntry]) -> Result<(), RenderError> {
    if fetched.len() == request.entries.len() {
        return Ok(());
    }
    Err(format!(
        "the database answered {} entries for {} asked",
        fetched.len(),
        request.entries.len()
    )
    .into())
}

/// Opens an entry's object with what every answer entry carries, JSON or framed: `queue`,
/// `partition`, `partitionId`, `highWatermark`, `logStartOffset`.
pub fn entry_head(out: &mut Vec<u8>, ask: &FetchEntry, got: &FetchedEntry) {
    out.extend_from_slice(b"{\"queue\":");
    string(out, ask.queue.as_str());
    out.extend_from_slice(b",\"partition\":");
    string(out, ask.partition.as_str());
    out.extend_from_slice(b",\"partitionId\":");
    match got.partition_id {
        Some(id) => write!(out, "\"{id}\"").expect("vec write"),
        None => out.extend_from_slice(b"null"),
    }
    out.extend_from_slice(b",\"highWatermark\":");
    number(out, got.high_watermark);
    out.extend_from_slice(b",\"logStartOffset\":");
    number(out, got.log_start);
}

/// The entry-level error of reading from `offset`: an unknown queue, or an offset outside
/// `logStartOffset..=highWatermark`; `None` when the entry reads.
pub fn entry_error(offset: i64, got: &FetchedEntry) -> Option<&'static str> {
    if !got.queue_known {
        Some(UNKNOWN)
    } else if offset < got.log_start || offset > got.high_watermark {
        Some(OUT_OF_RANGE)
    } else {
        None
    }
}

/// What is left of the call's budget, and whether anything was delivered yet.
struct Budget {
    call_left: i64,
    delivered: bool,
}

/// Writes one entry's records from `offset` on; returns the offset after the last one.
fn records(
    out: &mut Vec<u8>,
    offset: i64,
    entry_bytes: i64,
    got: &FetchedEntry,
    budget: &mut Budget,
    key: Option<&PayloadKey>,
) -> Result<i64, RenderError> {
    let mut next = offset;
    let mut entry_left = entry_bytes;
    let mut record = Vec::with_capacity(256);
    let mut first = true;
    for segment in &got.segments {
        let skip = next - segment.base_offset;
        if skip < 0 || skip > i64::from(segment.msg_count) {
            return Err(format!(
                "segment at {} does not continue offset {next}",
                segment.base_offset
            )
            .into());
        }
        let raw = open_blob(Codec::from_i16(segment.codec)?, &segment.blob)?;
        let take = i64::from(segment.msg_count) - skip;
        let frames = slice_frames(&raw, skip as usize, take as usize)?;
        let ts = segment.created_at.format("%Y-%m-%dT%H:%M:%S%.3fZ");
        for frame in frames {
            record.clear();
            record.extend_from_slice(b"{\"offset\":");
            number(&mut record, next);
            record.extend_from_slice(b",\"transactionId\":");
            string(&mut record, frame.transaction_id);
            record.extend_from_slice(b",\"payload\":");
            let opened;
            let payload = if frame.flags & FLAG_ENCRYPTED != 0 {
                let key = key.ok_or(SealError::Unopenable)?;
                opened = key.open(&frame.message_id, frame.payload)?;
                opened.as_slice()
            } else {
                frame.payload
            };
            // An erased message keeps its offset with an empty payload.
            record.extend_from_slice(if payload.is_empty() { b"null" } else { payload });
            write!(record, ",\"ts\":\"{ts}\"}}").expect("vec write");
            let size = record.len() as i64;
            if budget.delivered && (size > entry_left || size > budget.call_left) {
                return Ok(next);
            }
            if !first {
                out.push(b',');
            }
            first = false;
            out.extend_from_slice(&record);
            entry_left -= size;
            budget.call_left -= size;
            budget.delivered = true;
            next += 1;
        }
    }
    Ok(next)
}
