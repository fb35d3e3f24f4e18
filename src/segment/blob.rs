//! Segment blobs: frames compressed as one unit on push, opened and sliced on pop.
//!
//! One push builds one blob per (queue, partition) with a [`SegmentBuilder`]; the pop path
//! calls [`open_blob`] on what PostgreSQL returns and walks the frames it needs. The codec
//! byte is stored beside the blob (`log_segments.codec`) and travels in the framed answer.

use std::borrow::Cow;
use std::cell::RefCell;

use super::frame::{FrameError, FrameIter, NewFrame, StoredFrame, FLAG_ENCRYPTED};

/// Largest decompressed segment the broker will open. A segment is one push's messages for
/// one partition, bounded by the request body limit; anything larger is corrupt or hostile.
pub const MAX_SEGMENT_BYTES: usize = 512 * 1024 * 1024;

thread_local! {
    // One zstd context per thread, reused: creating one per segment showed in the push
    // and pop profiles (ZSTD_createCCtx / ZSTD_createDCtx).
    static COMPRESSOR: RefCell<zstd::bulk::Compressor<'static>> =
        RefCell::new(zstd::bulk::Compressor::new(1).expect("a zstd context at level 1"));
    static DECOMPRESSOR: RefCell<zstd::bulk::Decompressor<'static>> =
        RefCell::new(zstd::bulk::Decompressor::new().expect("a zstd decompression context"));
}

/// How a blob's bytes are encoded (the `codec` column and the framed answer's codec byte).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Codec {
    /// The frames as they are.
    Raw = 0,
    /// One zstd frame whose content is the frames.
    Zstd = 1,
    /// As `Zstd`, and some frames carry sealed payloads (flag 4, an encrypted queue): the
    /// blob must be opened before any answer, so it never ships in a framed pop as it is.
    SealedZstd = 2,
}

impl Codec {
    /// The stored byte.
    pub fn as_i16(self) -> i16 {
        self as i16
    }

    /// Reads the stored byte back.
    pub fn from_i16(value: i16) -> Result<Self, BlobError> {
        match value {
            0 => Ok(Codec::Raw),
            1 => Ok(Codec::Zstd),
            2 => Ok(Codec::SealedZstd),
            other => Err(BlobError::UnknownCodec(other)),
        }
    }
}

/// Why a blob could not be built or opened.
#[derive(Debug, thiserror::Error)]
pub enum BlobError {
    /// A codec byte this broker does not know.
    #[error("unknown segment codec {0}")]
    UnknownCodec(i16),
    /// zstd refused to compress or decompress.
    #[error("zstd failed")]
    Zstd(#[source] std::io::Error),
    /// The zstd frame does not state its size, or states one too large.
    #[error("segment content size missing or above the limit")]
    Size,
    /// A frame inside the blob is malformed.
    #[error("malformed frame in segment")]
    Frame(#[from] FrameError),
    /// The blob holds fewer frames than the slice asks for.
    #[error("segment holds fewer frames than its row says")]
    ShortSegment,
}

/// A finished segment: what goes into one `log_segments` row.
#[derive(Debug, Clone)]
pub struct SegmentBlob {
    /// Number of frames (messages).
    pub count: u32,
    /// How `bytes` is encoded.
    pub codec: Codec,
    /// The stored bytes.
    pub bytes: Vec<u8>,
}

/// Accumulates frames for one (queue, partition) of a push.
#[derive(Debug, Default)]
pub struct SegmentBuilder {
    raw: Vec<u8>,
    count: u32,
    sealed: bool,
}

impl SegmentBuilder {
    /// An empty segment.
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends one message.
    pub fn push(&mut self, frame: &NewFrame<'_>) -> Result<(), FrameError> {
        frame.encode(&mut self.raw)?;
        self.count += 1;
        Ok(())
    }

    /// Appends one message whose payload is already sealed ([`crate::segment::seal`]):
    /// the frame carries flag 4 so that readers open it before rendering.
    pub fn push_sealed(&mut self, frame: &NewFrame<'_>) -> Result<(), FrameError> {
        let start = self.raw.len();
        frame.encode(&mut self.raw)?;
        // The flags byte follows the 4-byte length prefix.
        self.raw[start + 4] |= FLAG_ENCRYPTED;
        self.count += 1;
        self.sealed = true;
        Ok(())
    }

    /// Appends a stored frame exactly as it was stored (flags included): used when a
    /// segment is rewritten around one changed frame.
    pub fn push_stored(&mut self, frame: &StoredFrame<'_>) {
        self.raw.extend_from_slice(frame.raw);
        self.count += 1;
        self.sealed |= frame.flags & FLAG_ENCRYPTED != 0;
    }

    /// Number of frames so far.
    pub fn len(&self) -> u32 {
        self.count
    }

    /// True when no frame was pushed.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Compresses the frames as one zstd frame (with its content size recorded, which the
    /// framed-pop clients rely on).
    pub fn finish(self, level: i32) -> Result<SegmentBlob, BlobError> {
        let bytes = COMPRESSOR
            .with(|c| {
                let mut c = c.borrow_mut();
                c.set_compression_level(level)?;
                c.compress(&self.raw)
            })
            .map_err(BlobError::Zstd)?;
        Ok(SegmentBlob {
            count: self.count,
            codec: if self.sealed {
                Codec::SealedZstd
            } else {
                Codec::Zstd
            },
            bytes,
        })
    }
}

/// Decodes a stored blob into its frames' bytes.
pub fn open_blob(codec: Codec, bytes: &[u8]) -> Result<Cow<'_, [u8]>, BlobError> {
    match codec {
        Codec::Raw => Ok(Cow::Borrowed(bytes)),
        Codec::Zstd | Codec::SealedZstd => {
            let size = zstd::zstd_safe::get_frame_content_size(bytes)
                .ok()
                .flatten()
                .and_then(|s| usize::try_from(s).ok())
                .filter(|s| *s <= MAX_SEGMENT_BYTES)
                .ok_or(BlobError::Size)?;
            let raw = DECOMPRESSOR
                .with(|d| d.borrow_mut().decompress(bytes, size))
                .map_err(BlobError::Zstd)?;
            Ok(Cow::Owned(raw))
        }
    }
}

/// The frames `[start, start + take)` of an opened blob, in order.
pub fn slice_frames(
    frames: &[u8],
    start: usize,
    take: usize,
) -> Result<Vec<StoredFrame<'_>>, BlobError> {
    let mut out = Vec::with_capacity(take);
    for frame in FrameIter::new(frames).skip(start).take(take) {
        out.push(frame?);
    }
    if out.len() != take {
        return Err(BlobError::ShortSegment);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use uuid::Uuid;

    use super::*;

    fn build(n: usize) -> (SegmentBlob, Vec<String>) {
        let mut builder = SegmentBuilder::new();
        let payloads: Vec<String> = (0..n).map(|i| format!(r#"{{"i":{i}}}"#)).collect();
        for (i, p) in payloads.iter().enumerate() {
            let txn = format!("t{i}");
            builder
                .push(&NewFrame {
                    message_id: Uuid::now_v7(),
                    trace_id: None,
                    transaction_id: &txn,
                    producer: None,
                    payload: p.as_bytes(),
                })
                .unwrap();
        }
        (builder.finish(1).unwrap(), payloads)
    }

    #[test]
    fn a_blob_opens_to_the_frames_it_was_built_from_and_slices_mid_segment() {
        let (blob, payloads) = build(10);
        assert_eq!(blob.count, 10);
        let raw = open_blob(blob.codec, &blob.bytes).unwrap();
        let slice = slice_frames(&raw, 3, 4).unwrap();
        let got: Vec<&[u8]> = slice.iter().map(|f| f.payload).collect();
        let want: Vec<&[u8]> = payloads[3..7].iter().map(|p| p.as_bytes()).collect();
        assert_eq!(got, want);
        assert_eq!(slice[0].transaction_id, "t3");
    }

    #[test]
    fn a_slice_past_the_end_is_an_error() {
        let (blob, _) = build(3);
        let raw = open_blob(blob.codec, &blob.bytes).unwrap();
        assert!(matches!(
            slice_frames(&raw, 2, 2),
            Err(BlobError::ShortSegment)
        ));
    }

    #[test]
    fn garbage_bytes_do_not_open() {
        assert!(open_blob(Codec::Zstd, b"not zstd at all").is_err());
        assert!(Codec::from_i16(7).is_err());
    }
}
