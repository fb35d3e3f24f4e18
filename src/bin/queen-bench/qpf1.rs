//! The framed pop answer `QPF1` (wire contract §2.5), decoded into what a benchmark consumer
//! needs: the lease, and per delivered message its partition id, transaction id and payload.
//!
//! Only the messages inside each claim's inclusive `start ..= end` window are returned: whole
//! stored records are shipped even when a claim starts or ends inside one. Acking and
//! reading the payload stay in `broker`.

use anyhow::{bail, ensure, Context};

/// A decoded answer.
#[derive(Debug, Default)]
pub struct Answer {
    /// The answer's lease, shared by every claim (`""` without one).
    pub lease_id: String,
    /// The delivered messages, in answer order.
    pub messages: Vec<Message>,
}

/// One delivered message.
#[derive(Debug, Clone, PartialEq)]
pub struct Message {
    /// Its claim's partition id, as the decimal text an ack sends.
    pub partition_id: String,
    /// The transaction id from its stored frame.
    pub transaction_id: String,
    /// The payload bytes (JSON text).
    pub payload: Vec<u8>,
}

/// Record codecs.
const CODEC_RAW: u8 = 0;
const CODEC_ZSTD: u8 = 1;

/// Stored-frame flag bits that add a field before the payload.
const FRAME_TRACE: u8 = 1;
const FRAME_PRODUCER: u8 = 2;
const FRAME_ENCRYPTED: u8 = 4;

/// Decodes a whole answer; anything malformed or left over is an error.
pub fn decode(body: &[u8]) -> anyhow::Result<Answer> {
    let mut c = Cursor(body);
    ensure!(c.take(4)? == b"QPF1", "not a QPF1 answer");
    match c.u8()? {
        0 => {}
        1 => {
            let own_keys = c.u32()? as usize;
            c.take(own_keys)?;
        }
        v => bail!("QPF1 version {v}"),
    }
    let _queue = c.str16()?;
    let lease_id = c.str16()?.to_owned();
    let _group = c.str16()?;
    let mut messages = Vec::new();
    for _ in 0..c.u32()? {
        let partition_id = c.u64()?.to_string();
        let _partition = c.str16()?;
        let start = c.u64()?;
        let end = c.u64()?;
        let _attempt = c.u32()?;
        for _ in 0..c.u32()? {
            let base = c.u64()?;
            let _created_at_us = c.u64()?;
            let count = c.u32()?;
            let codec = c.u8()?;
            let len = c.u32()? as usize;
            let bytes = c.take(len)?;
            let frames = match codec {
                CODEC_RAW => bytes.to_vec(),
                CODEC_ZSTD => zstd::stream::decode_all(bytes).context("record decompresses")?,
                other => bail!("unknown record codec {other}"),
            };
            let mut f = Cursor(&frames);
            for i in 0..u64::from(count) {
                let body_len = f.u32()? as usize;
                let frame = f.take(body_len)?;
                let offset = base + i;
                if (start..=end).contains(&offset) {
                    let (transaction_id, payload) = frame_fields(frame)?;
                    messages.push(Message {
                        partition_id: partition_id.clone(),
                        transaction_id: transaction_id.to_owned(),
                        payload: payload.to_vec(),
                    });
                }
            }
            ensure!(f.0.is_empty(), "record holds more than {count} frames");
        }
    }
    ensure!(c.0.is_empty(), "{} bytes after the last claim", c.0.len());
    Ok(Answer { lease_id, messages })
}

/// One claim of a framed answer, counted from its record heads only.
#[derive(Debug, Clone, PartialEq)]
pub struct Span {
    /// The claim's partition name.
    pub partition: String,
    /// First delivered offset.
    pub start: u64,
    /// Messages of its records inside `start ..= end`.
    pub delivered: u64,
}

/// The claims of an answer with the messages each delivers, counted as a raw `SELECT`
/// counts them (record heads: base offset and message count), no record opened or
/// decompressed; anything malformed or left over is an error.
pub fn spans(body: &[u8]) -> anyhow::Result<Vec<Span>> {
    let mut c = Cursor(body);
    ensure!(c.take(4)? == b"QPF1", "not a QPF1 answer");
    match c.u8()? {
        0 => {}
        1 => {
            let own_keys = c.u32()? as usize;
            c.take(own_keys)?;
        }
        v => bail!("QPF1 version {v}"),
    }
    for _ in 0..3 {
        c.str16()?;
    }
    let mut out = Vec::new();
    for _ in 0..c.u32()? {
        let _partition_id = c.u64()?;
        let partition = c.str16()?.to_owned();
        let start = c.u64()?;
        let end = c.u64()?;
        let _attempt = c.u32()?;
        let mut delivered = 0;
        for _ in 0..c.u32()? {
            let base = c.u64()?;
            let _created_at_us = c.u64()?;
            let count = u64::from(c.u32()?);
            let _codec = c.u8()?;
            let len = c.u32()? as usize;
            c.take(len)?;
            let (first, last) = (base.max(start), (base + count).min(end + 1));
            delivered += last.saturating_sub(first);
        }
        out.push(Span {
            partition,
            start,
            delivered,
        });
    }
    ensure!(c.0.is_empty(), "{} bytes after the last claim", c.0.len());
    Ok(out)
}

/// The transaction id and payload of one stored frame (after its `body_len`).
fn frame_fields(frame: &[u8]) -> anyhow::Result<(&str, &[u8])> {
    let mut f = Cursor(frame);
    let flags = f.u8()?;
    ensure!(
        flags & FRAME_ENCRYPTED == 0,
        "encrypted frame in a framed answer"
    );
    f.take(16)?;
    if flags & FRAME_TRACE != 0 {
        f.take(16)?;
    }
    let txn = f.str16()?;
    if flags & FRAME_PRODUCER != 0 {
        f.str16()?;
    }
    Ok((txn, f.0))
}

/// Little-endian reader that errors instead of reading past the end.
struct Cursor<'a>(&'a [u8]);

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize) -> anyhow::Result<&'a [u8]> {
        ensure!(
            n <= self.0.len(),
            "QPF1 truncated: need {n}, have {}",
            self.0.len()
        );
        let (head, tail) = self.0.split_at(n);
        self.0 = tail;
        Ok(head)
    }

    fn array<const N: usize>(&mut self) -> anyhow::Result<[u8; N]> {
        Ok(self.take(N)?.try_into().expect("take returned N bytes"))
    }

    fn u8(&mut self) -> anyhow::Result<u8> {
        Ok(self.take(1)?[0])
    }

    fn u16(&mut self) -> anyhow::Result<u16> {
        Ok(u16::from_le_bytes(self.array()?))
    }

    fn u32(&mut self) -> anyhow::Result<u32> {
        Ok(u32::from_le_bytes(self.array()?))
    }

    fn u64(&mut self) -> anyhow::Result<u64> {
        Ok(u64::from_le_bytes(self.array()?))
    }

    fn str16(&mut self) -> anyhow::Result<&'a str> {
        let n = self.u16()? as usize;
        std::str::from_utf8(self.take(n)?).context("QPF1 string is not UTF-8")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn str16(out: &mut Vec<u8>, s: &str) {
        out.extend_from_slice(&(s.len() as u16).to_le_bytes());
        out.extend_from_slice(s.as_bytes());
    }

    /// A stored frame with the given flags; trace and producer fields filled when flagged.
    fn frame(flags: u8, txn: &str, payload: &str) -> Vec<u8> {
        let mut body = vec![flags];
        body.extend_from_slice(&[7; 16]);
        if flags & FRAME_TRACE != 0 {
            body.extend_from_slice(&[9; 16]);
        }
        str16(&mut body, txn);
        if flags & FRAME_PRODUCER != 0 {
            str16(&mut body, "alice");
        }
        body.extend_from_slice(payload.as_bytes());
        let mut out = (body.len() as u32).to_le_bytes().to_vec();
        out.extend_from_slice(&body);
        out
    }

    fn record(out: &mut Vec<u8>, base: u64, codec: u8, frames: &[Vec<u8>]) {
        let raw: Vec<u8> = frames.concat();
        let bytes = match codec {
            CODEC_ZSTD => zstd::bulk::compress(&raw, 1).unwrap(),
            _ => raw,
        };
        out.extend_from_slice(&base.to_le_bytes());
        out.extend_from_slice(&1_700_000_000_000_000i64.to_le_bytes());
        out.extend_from_slice(&(frames.len() as u32).to_le_bytes());
        out.push(codec);
        out.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
        out.extend_from_slice(&bytes);
    }

    fn claim_head(out: &mut Vec<u8>, id: u64, start: u64, end: u64, records: u32) {
        out.extend_from_slice(&id.to_le_bytes());
        str16(out, "p0");
        out.extend_from_slice(&start.to_le_bytes());
        out.extend_from_slice(&end.to_le_bytes());
        out.extend_from_slice(&1u32.to_le_bytes());
        out.extend_from_slice(&records.to_le_bytes());
    }

    fn answer_head(claims: u32) -> Vec<u8> {
        let mut out = b"QPF1\x01".to_vec();
        let own = br#"{"autopilot":{"batch":100}}"#;
        out.extend_from_slice(&(own.len() as u32).to_le_bytes());
        out.extend_from_slice(own);
        str16(&mut out, "q");
        str16(&mut out, "lease-1");
        str16(&mut out, "__QUEUE_MODE__");
        out.extend_from_slice(&claims.to_le_bytes());
        out
    }

    fn txns(a: &Answer) -> Vec<(&str, &str)> {
        a.messages
            .iter()
            .map(|m| (m.partition_id.as_str(), m.transaction_id.as_str()))
            .collect()
    }

    #[test]
    fn only_offsets_inside_each_inclusive_claim_window_are_delivered() {
        let mut body = answer_head(2);
        // Claim 1: records at 10..13 (zstd) and 13..15 (raw); window 11..=13.
        claim_head(&mut body, 42, 11, 13, 2);
        let r1: Vec<_> = ["a", "b", "c"].iter().map(|t| frame(0, t, "{}")).collect();
        record(&mut body, 10, CODEC_ZSTD, &r1);
        let r2 = vec![frame(0, "d", "{}"), frame(0, "e", "{}")];
        record(&mut body, 13, CODEC_RAW, &r2);
        // Claim 2: one record, window covering all of it.
        claim_head(&mut body, 7, 0, 0, 1);
        record(&mut body, 0, CODEC_RAW, &[frame(0, "z", r#"{"seq":5}"#)]);

        let a = decode(&body).unwrap();

        assert_eq!(a.lease_id, "lease-1");
        assert_eq!(
            txns(&a),
            vec![("42", "b"), ("42", "c"), ("42", "d"), ("7", "z")]
        );
        assert_eq!(a.messages[3].payload, br#"{"seq":5}"#);
    }

    #[test]
    fn trace_and_producer_fields_are_skipped_to_reach_the_payload() {
        let mut body = answer_head(1);
        claim_head(&mut body, 1, 0, 0, 1);
        record(
            &mut body,
            0,
            CODEC_ZSTD,
            &[frame(FRAME_TRACE | FRAME_PRODUCER, "t", "[1]")],
        );

        let a = decode(&body).unwrap();

        assert_eq!(txns(&a), vec![("1", "t")]);
        assert_eq!(a.messages[0].payload, b"[1]");
    }

    #[test]
    fn spans_count_the_window_from_record_heads_without_opening_records() {
        let mut body = answer_head(1);
        claim_head(&mut body, 9, 4, 8, 2);
        // Records the decoder never opens: garbage bytes under an unknown codec.
        for (base, count) in [(3u64, 2u32), (5, 6)] {
            body.extend_from_slice(&base.to_le_bytes());
            body.extend_from_slice(&0i64.to_le_bytes());
            body.extend_from_slice(&count.to_le_bytes());
            body.push(9);
            body.extend_from_slice(&3u32.to_le_bytes());
            body.extend_from_slice(b"???");
        }
        let got = spans(&body).unwrap();
        assert_eq!(got.len(), 1);
        assert_eq!((got[0].start, got[0].delivered), (4, 5));
        body.push(0);
        assert!(spans(&body).is_err());
    }

    #[test]
    fn version_0_zero_claims_is_an_empty_delivery() {
        let mut body = b"QPF1\x00".to_vec();
        for s in ["q", "", "g"] {
            str16(&mut body, s);
        }
        body.extend_from_slice(&0u32.to_le_bytes());

        let a = decode(&body).unwrap();

        assert!(a.messages.is_empty());
        assert_eq!(a.lease_id, "");
    }

    #[test]
    fn truncation_unknown_codecs_encryption_and_trailing_bytes_are_errors() {
        let mut good = answer_head(1);
        claim_head(&mut good, 1, 0, 0, 1);
        record(&mut good, 0, CODEC_RAW, &[frame(0, "t", "{}")]);
        assert!(decode(&good).is_ok());

        assert!(decode(&good[..good.len() - 1]).is_err(), "truncated");
        let mut trailing = good.clone();
        trailing.push(0);
        assert!(decode(&trailing).is_err(), "trailing byte");
        assert!(decode(b"QPF2\x01").is_err(), "bad magic");

        let mut codec = answer_head(1);
        claim_head(&mut codec, 1, 0, 0, 1);
        record(&mut codec, 0, 9, &[frame(0, "t", "{}")]);
        assert!(decode(&codec).is_err(), "unknown codec");

        let mut sealed = answer_head(1);
        claim_head(&mut sealed, 1, 0, 0, 1);
        record(
            &mut sealed,
            0,
            CODEC_RAW,
            &[frame(FRAME_ENCRYPTED, "t", "{}")],
        );
        assert!(decode(&sealed).is_err(), "encrypted frame");
    }
}
