//! Reading stored messages for the admin answers: one frame out of a segment blob (opened
//! here, in Rust; PostgreSQL never looks inside), and the contract's time format.

use chrono::{DateTime, Utc};

use crate::http::ApiError;
use crate::segment::frame::FLAG_ENCRYPTED;
use crate::segment::{open_blob, slice_frames, Codec};

/// One message read back out of a stored segment, owned.
pub(crate) struct StoredMessage {
    /// The message id.
    pub message_id: uuid::Uuid,
    /// The trace id, if any.
    pub trace_id: Option<uuid::Uuid>,
    /// The producer of the frame, if any.
    pub producer: Option<String>,
    /// The payload as JSON (`null` for an encrypted or empty payload).
    pub payload: serde_json::Value,
    /// The payload bytes exactly as stored.
    pub payload_bytes: Vec<u8>,
    /// True when the payload is ciphertext (frame flag 4).
    pub encrypted: bool,
}

/// Opens a segment blob (zstd in Rust, never in SQL) and reads its frame `index`.
pub(crate) fn frame_at(codec: i16, blob: &[u8], index: i64) -> Result<StoredMessage, ApiError> {
    let corrupt = |e: crate::segment::BlobError| ApiError::Corrupt(Box::new(e));
    let index =
        usize::try_from(index).map_err(|_| corrupt(crate::segment::BlobError::ShortSegment))?;
    let raw = open_blob(Codec::from_i16(codec).map_err(corrupt)?, blob).map_err(corrupt)?;
    let frames = slice_frames(&raw, index, 1).map_err(corrupt)?;
    let frame = frames[0];
    let payload = if frame.flags & FLAG_ENCRYPTED != 0 || frame.payload.is_empty() {
        serde_json::Value::Null
    } else {
        serde_json::from_slice(frame.payload).unwrap_or(serde_json::Value::Null)
    };
    Ok(StoredMessage {
        message_id: frame.message_id,
        trace_id: frame.trace_id,
        producer: frame.producer.map(str::to_owned),
        payload,
        payload_bytes: frame.payload.to_vec(),
        encrypted: frame.flags & FLAG_ENCRYPTED != 0,
    })
}

/// The contract's time format: UTC, three fractional digits.
pub(crate) fn iso(t: &DateTime<Utc>) -> String {
    t.format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string()
}
