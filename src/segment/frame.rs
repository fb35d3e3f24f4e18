//! One stored frame: a message as it sits inside a segment.
//!
//! Layout (little-endian): `u32 body_len`, then `body_len` bytes of `u8 flags`, 16-byte
//! message id, optional 16-byte trace id (flag 1), `u16 len` + transaction id, optional
//! `u16 len` + producer (flag 2), and the JSON payload (the rest). Flag 4 marks an encrypted
//! payload. Encoding and decoding live here; compression lives in `blob`.

use uuid::Uuid;

/// Frame flag: a trace id follows the message id.
pub const FLAG_TRACE: u8 = 1;
/// Frame flag: a producer string follows the transaction id.
pub const FLAG_PRODUCER: u8 = 2;
/// Frame flag: the payload is encrypted (never produced by this broker yet).
pub const FLAG_ENCRYPTED: u8 = 4;
const KNOWN_FLAGS: u8 = FLAG_TRACE | FLAG_PRODUCER | FLAG_ENCRYPTED;

/// The fixed part of a body: flags byte plus message id.
const FIXED_BODY: usize = 1 + 16;

/// Why a frame could not be encoded or decoded.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum FrameError {
    /// A length field points past the end of the buffer.
    #[error("frame truncated at byte {at}")]
    Truncated {
        /// Offset in the buffer where the frame that does not fit starts.
        at: usize,
    },
    /// Flag bits this broker does not know.
    #[error("unknown frame flags {flags:#04x}")]
    UnknownFlags {
        /// The flags byte as read.
        flags: u8,
    },
    /// A string that does not fit its `u16` length prefix.
    #[error("{field} is longer than 65535 bytes")]
    TooLong {
        /// Which field.
        field: &'static str,
    },
    /// A string field that is not UTF-8.
    #[error("{field} is not valid UTF-8")]
    NotUtf8 {
        /// Which field.
        field: &'static str,
    },
    /// A frame whose body is too large for its `u32` length.
    #[error("frame body exceeds 4 GiB")]
    BodyTooLarge,
    /// A transaction id with a NUL character: acks and admin lookups carry transaction ids
    /// as PostgreSQL text, which cannot hold one, so such a message could never be acked.
    #[error("transactionId contains a NUL character")]
    NulInTransactionId,
}

/// A message about to be written into a segment.
#[derive(Debug, Clone, Copy)]
pub struct NewFrame<'a> {
    /// The message id (UUIDv7, minted by the broker or the client).
    pub message_id: Uuid,
    /// Optional trace correlation id.
    pub trace_id: Option<Uuid>,
    /// The dedup key within the partition.
    pub transaction_id: &'a str,
    /// Producer identity stamped by the broker, if any.
    pub producer: Option<&'a str>,
    /// One JSON document.
    pub payload: &'a [u8],
}

impl NewFrame<'_> {
    /// Appends this frame to `out`.
    pub fn encode(&self, out: &mut Vec<u8>) -> Result<(), FrameError> {
        let txn = self.transaction_id.as_bytes();
        if txn.contains(&0) {
            return Err(FrameError::NulInTransactionId);
        }
        let txn_len = u16::try_from(txn.len()).map_err(|_| FrameError::TooLong {
            field: "transactionId",
        })?;
        let producer_len = match self.producer {
            Some(p) => Some(
                u16::try_from(p.len()).map_err(|_| FrameError::TooLong { field: "producer" })?,
            ),
            None => None,
        };
        let body_len = FIXED_BODY
            + self.trace_id.map_or(0, |_| 16)
            + 2
            + txn.len()
            + producer_len.map_or(0, |l| 2 + usize::from(l))
            + self.payload.len();
        let body_len = u32::try_from(body_len).map_err(|_| FrameError::BodyTooLarge)?;

        let mut flags = 0u8;
        if self.trace_id.is_some() {
            flags |= FLAG_TRACE;
        }
        if self.producer.is_some() {
            flags |= FLAG_PRODUCER;
        }
        out.reserve(4 + body_len as usize);
        out.extend_from_slice(&body_len.to_le_bytes());
        out.push(flags);
        out.extend_from_slice(self.message_id.as_bytes());
        if let Some(trace) = self.trace_id {
            out.extend_from_slice(trace.as_bytes());
        }
        out.extend_from_slice(&txn_len.to_le_bytes());
        out.extend_from_slice(txn);
        if let (Some(p), Some(len)) = (self.producer, producer_len) {
            out.extend_from_slice(&len.to_le_bytes());
            out.extend_from_slice(p.as_bytes());
        }
        out.extend_from_slice(self.payload);
        Ok(())
    }
}

/// A frame read back from a decompressed segment, borrowing the buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StoredFrame<'a> {
    /// The frame's flag bits.
    pub flags: u8,
    /// The message id.
    pub message_id: Uuid,
    /// The trace id, when flag 1 is set.
    pub trace_id: Option<Uuid>,
    /// The transaction id.
    pub transaction_id: &'a str,
    /// The producer, when flag 2 is set.
    pub producer: Option<&'a str>,
    /// The payload bytes (JSON text, or ciphertext when flag 4 is set).
    pub payload: &'a [u8],
    /// The whole frame, length prefix included, as stored.
    pub raw: &'a [u8],
}

/// Walks the frames of a decompressed buffer in order.
pub struct FrameIter<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> FrameIter<'a> {
    /// Starts at the first frame of `buf`.
    pub fn new(buf: &'a [u8]) -> Self {
        Self { buf, pos: 0 }
    }
}

impl<'a> Iterator for FrameIter<'a> {
    type Item = Result<StoredFrame<'a>, FrameError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.pos >= self.buf.len() {
            return None;
        }
        let start = self.pos;
        let result = decode_at(self.buf, start);
        match &result {
            Ok(frame) => self.pos = start + frame.raw.len(),
            Err(_) => self.pos = self.buf.len(),
        }
        Some(result)
    }
}

fn decode_at(buf: &[u8], start: usize) -> Result<StoredFrame<'_>, FrameError> {
    let truncated = FrameError::Truncated { at: start };
    let len_bytes = buf.get(start..start + 4).ok_or(truncated.clone())?;
    let body_len = u32::from_le_bytes(len_bytes.try_into().expect("slice of four bytes")) as usize;
    let end = (start + 4).checked_add(body_len).ok_or(truncated.clone())?;
    let body = buf.get(start + 4..end).ok_or(truncated.clone())?;
    let mut cur = Cursor {
        body,
        pos: 0,
        err: truncated,
    };

    let flags = cur.take(1)?[0];
    if flags & !KNOWN_FLAGS != 0 {
        return Err(FrameError::UnknownFlags { flags });
    }
    let message_id = Uuid::from_slice(cur.take(16)?).expect("sixteen bytes make a uuid");
    let trace_id = if flags & FLAG_TRACE != 0 {
        Some(Uuid::from_slice(cur.take(16)?).expect("sixteen bytes make a uuid"))
    } else {
        None
    };
    let transaction_id = cur.string("transactionId")?;
    let producer = if flags & FLAG_PRODUCER != 0 {
        Some(cur.string("producer")?)
    } else {
        None
    };
    Ok(StoredFrame {
        flags,
        message_id,
        trace_id,
        transaction_id,
        producer,
        payload: &body[cur.pos..],
        raw: &buf[start..end],
    })
}

struct Cursor<'a> {
    body: &'a [u8],
    pos: usize,
    err: FrameError,
}

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], FrameError> {
        let bytes = self
            .body
            .get(self.pos..self.pos + n)
            .ok_or_else(|| self.err.clone())?;
        self.pos += n;
        Ok(bytes)
    }

    fn string(&mut self, field: &'static str) -> Result<&'a str, FrameError> {
        let len = u16::from_le_bytes(self.take(2)?.try_into().expect("two bytes")) as usize;
        std::str::from_utf8(self.take(len)?).map_err(|_| FrameError::NotUtf8 { field })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample<'a>(payload: &'a [u8], producer: Option<&'a str>, trace: bool) -> NewFrame<'a> {
        NewFrame {
            message_id: Uuid::now_v7(),
            trace_id: trace.then(Uuid::new_v4),
            transaction_id: "txn-1",
            producer,
            payload,
        }
    }

    #[test]
    fn a_transaction_id_with_a_nul_character_is_refused() {
        let frame = NewFrame {
            message_id: Uuid::nil(),
            trace_id: None,
            transaction_id: "a\0b",
            producer: None,
            payload: b"1",
        };
        let mut out = Vec::new();
        assert_eq!(frame.encode(&mut out), Err(FrameError::NulInTransactionId));
        assert!(out.is_empty());
    }

    #[test]
    fn frames_round_trip_with_and_without_optional_fields() {
        let frames = [
            sample(br#"{"a":1}"#, None, false),
            sample(b"[1,2,3]", Some("alice"), true),
            sample(b"", None, true),
        ];
        let mut buf = Vec::new();
        for f in &frames {
            f.encode(&mut buf).unwrap();
        }
        let decoded: Vec<_> = FrameIter::new(&buf).collect::<Result<_, _>>().unwrap();
        assert_eq!(decoded.len(), 3);
        for (d, f) in decoded.iter().zip(&frames) {
            assert_eq!(d.message_id, f.message_id);
            assert_eq!(d.trace_id, f.trace_id);
            assert_eq!(d.transaction_id, f.transaction_id);
            assert_eq!(d.producer, f.producer);
            assert_eq!(d.payload, f.payload);
        }
        assert_eq!(decoded[1].flags, FLAG_TRACE | FLAG_PRODUCER);
    }

    #[test]
    fn a_truncated_buffer_is_an_error_not_a_panic() {
        let mut buf = Vec::new();
        sample(b"{}", None, false).encode(&mut buf).unwrap();
        for cut in 1..buf.len() {
            let result: Result<Vec<_>, _> = FrameIter::new(&buf[..cut]).collect();
            assert!(result.is_err(), "cut at {cut} decoded");
        }
    }

    #[test]
    fn a_body_length_pointing_past_the_end_is_refused() {
        let mut buf = Vec::new();
        sample(b"{}", None, false).encode(&mut buf).unwrap();
        buf[0..4].copy_from_slice(&u32::MAX.to_le_bytes());
        assert_eq!(
            FrameIter::new(&buf).next(),
            Some(Err(FrameError::Truncated { at: 0 }))
        );
    }

    #[test]
    fn unknown_flags_are_refused() {
        let mut buf = Vec::new();
        sample(b"{}", None, false).encode(&mut buf).unwrap();
        buf[4] = 0x80;
        assert_eq!(
            FrameIter::new(&buf).next(),
            Some(Err(FrameError::UnknownFlags { flags: 0x80 }))
        );
    }

    #[test]
    fn an_overlong_transaction_id_is_refused_on_encode() {
        let long = "x".repeat(70_000);
        let frame = NewFrame {
            transaction_id: &long,
            ..sample(b"{}", None, false)
        };
        assert_eq!(
            frame.encode(&mut Vec::new()),
            Err(FrameError::TooLong {
                field: "transactionId"
            })
        );
    }
}
