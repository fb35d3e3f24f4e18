//! The framed answer of `POST /api/v1/fetch?frames=true`: the `QPF1` body of the framed
//! pop (wire contract §2.5, written by `http::binary::qpf1`), carrying the stored segments
//! as they are, with no decompression and no JSON per record.
//!
//! The own-keys JSON is `{"entries": [...]}`: per asked entry, in order, what the JSON entry
//! carries besides its records (`queue`, `partition`, `partitionId`, `highWatermark`,
//! `logStartOffset`, `nextOffset` or `error`) and `recordCount`, the records it delivers.
//! Then one claim per entry with `recordCount > 0`, in entry order: `start` is the asked
//! offset, `end` the last offset of the last segment, and the records are the segments
//! whole (the first may begin before `start`; the reader skips by offset). The header's
//! queue, lease and group are empty (entries may name several queues; a fetch has no lease
//! or group) and every claim's delivery attempt is 0.
//!
//! Budgets count stored bytes here: an entry delivers every segment `log_fetch_v1` selected
//! for it (each entry's and the call's stored bytes, the call's first segment whatever its
//! size), where the JSON answer cuts by rendered size. A cut therefore falls on a segment
//! end, and a framed answer delivers at least the records the JSON answer to the same call
//! does. A sealed segment is opened and ships as raw frames (codec 0): a framed answer
//! never carries ciphertext.

use super::fetch_render::{entry_error, entry_head, one_per_entry, RenderError};
use super::fetch_request::FetchRequest;
use crate::db::reads::fetch::FetchedEntry;
use crate::http::binary::qpf1::{opened_frames, ClaimHead, Header, RecordHead, Writer};
use crate::http::json_out::{number, string};
use crate::segment::{Codec, PayloadKey};

/// One entry's outcome: an error, or the offsets `start..=end` it delivers (`end` is
/// `start - 1` when it delivers nothing).
struct Span {
    error: Option<&'static str>,
    start: i64,
    end: i64,
}

impl Span {
    fn count(&self) -> i64 {
        self.end - self.start + 1
    }
}

/// Renders the framed answer body.
pub fn framed_answer(
    request: &FetchRequest,
    fetched: &[FetchedEntry],
    key: Option<&PayloadKey>,
) -> Result<Vec<u8>, RenderError> {
    one_per_entry(request, fetched)?;
    let spans = request
        .entries
        .iter()
        .zip(fetched)
        .map(|(ask, got)| span(ask.offset, got))
        .collect::<Result<Vec<_>, _>>()?;
    let own_keys = own_keys(request, fetched, &spans);
    let claims = spans.iter().filter(|s| s.count() > 0).count();
    let header = Header {
        own_keys: &own_keys,
        queue: "",
        lease_id: "",
        group: "",
        claims,
    };
    let capacity = fetched
        .iter()
        .flat_map(|e| &e.segments)
        .map(|s| s.blob.len() + 32)
        .sum::<usize>()
        + 64 * claims;
    let mut writer = Writer::new(capacity, &header)?;
    for ((ask, got), span) in request.entries.iter().zip(fetched).zip(&spans) {
        if span.count() <= 0 {
            continue;
        }
        let partition_id = got
            .partition_id
            .ok_or("the database answered segments of no partition")?;
        writer.claim(&ClaimHead {
            partition_id,
            partition: ask.partition.as_str(),
            start: span.start,
            end: span.end,
            delivery_attempt: 0,
            records: got.segments.len(),
        })?;
        for segment in &got.segments {
            let head = RecordHead {
                base_offset: segment.base_offset,
                created_at: segment.created_at,
                msg_count: segment.msg_count,
            };
            match Codec::from_i16(segment.codec)? {
                Codec::SealedZstd => {
                    let raw = opened_frames(Codec::SealedZstd, &segment.blob, key)?;
                    writer.record(&head, Codec::Raw, &raw)?;
                }
                codec => writer.record(&head, codec, &segment.blob)?,
            }
        }
    }
    Ok(writer.finish())
}

/// What an entry delivers: every message of its segments from the asked offset on. The
/// segments must hold `offset` and follow each other without a gap.
fn span(offset: i64, got: &FetchedEntry) -> Result<Span, RenderError> {
    let nothing = |error| Span {
        error,
        start: offset,
        end: offset - 1,
    };
    if let Some(error) = entry_error(offset, got) {
        return Ok(nothing(Some(error)));
    }
    let mut next = offset;
    for segment in &got.segments {
        let skip = next - segment.base_offset;
        if skip < 0 || skip >= i64::from(segment.msg_count) {
            return Err(format!(
                "segment at {} does not continue offset {next}",
                segment.base_offset
            )
            .into());
        }
        next = segment.base_offset + i64::from(segment.msg_count);
    }
    Ok(Span {
        error: None,
        start: offset,
        end: next - 1,
    })
}

/// The own-keys JSON object: `{"entries": [...]}`, one per asked entry, in order.
fn own_keys(request: &FetchRequest, fetched: &[FetchedEntry], spans: &[Span]) -> Vec<u8> {
    let mut out = Vec::with_capacity(160 * spans.len() + 16);
    out.extend_from_slice(b"{\"entries\":[");
    for (i, ((ask, got), span)) in request.entries.iter().zip(fetched).zip(spans).enumerate() {
        if i > 0 {
            out.push(b',');
        }
        entry_head(&mut out, ask, got);
        out.extend_from_slice(b",\"recordCount\":");
        number(&mut out, span.count().max(0));
        match span.error {
            Some(error) => {
                out.extend_from_slice(b",\"error\":");
                string(&mut out, error);
            }
            None => {
                out.extend_from_slice(b",\"nextOffset\":");
                number(&mut out, span.end + 1);
            }
        }
        out.push(b'}');
    }
    out.extend_from_slice(b"]}");
    out
}
