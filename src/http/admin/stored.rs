//! Reading stored messages for the admin answers: one frame out of a segment blob (opened
//! here, in Rust; PostgreSQL never looks inside; sealed payloads opened with the broker's
//! key), and the contract's time format.

use chrono::{DateTime, Utc};

use crate::http::error::ApiError;
use crate::segment::frame::FLAG_ENCRYPTED;
use crate::segment::{open_blob, slice_frames, Codec, PayloadKey, SealError};

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
    /// The payload bytes exactly as pushed (opened when it was sealed).
    pub payload_bytes: Vec<u8>,
    /// True when the payload is stored sealed (frame flag 4, an encrypted queue).
    pub encrypted: bool,
}

/// Opens a segment blob (zstd in Rust, never in SQL) and reads its frame `index`; a sealed
/// payload is opened with `key` (without the key, or when it does not open, the stored
/// data cannot be read: a 500, as for a pop).
pub(crate) fn frame_at(
    codec: i16,
    blob: &[u8],
    index: i64,
    key: Option<&PayloadKey>,
) -> Result<StoredMessage, ApiError> {
    let corrupt = |e: crate::segment::BlobError| ApiError::Corrupt(Box::new(e));
    let index =
        usize::try_from(index).map_err(|_| corrupt(crate::segment::BlobError::ShortSegment))?;
    let raw = open_blob(Codec::from_i16(codec).map_err(corrupt)?, blob).map_err(corrupt)?;
    let frames = slice_frames(&raw, index, 1).map_err(corrupt)?;
    let frame = frames[0];
    let encrypted = frame.flags & FLAG_ENCRYPTED != 0;
    let payload_bytes = if encrypted {
        let key = key.ok_or_else(|| ApiError::Corrupt(Box::new(SealError::Unopenable)))?;
        key.open(&frame.message_id, frame.payload)
            .map_err(|e| ApiError::Corrupt(Box::new(e)))?
    } else {
        frame.payload.to_vec()
    };
    let payload = if payload_bytes.is_empty() {
        serde_json::Value::Null
    } else {
        serde_json::from_slice(&payload_bytes).unwrap_or(serde_json::Value::Null)
    };
    Ok(StoredMessage {
        message_id: frame.message_id,
        trace_id: frame.trace_id,
        producer: frame.producer.map(str::to_owned),
        payload,
        payload_bytes,
        encrypted,
    })
}

/// The contract's time format: UTC, three fractional digits.
pub(crate) fn iso(t: &DateTime<Utc>) -> String {
    t.format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string()
}
