//! The messages: which sequence numbers go in which push, to which partition, and what
//! each payload looks like.
//!
//! A payload is one JSON document of exactly the configured size:
//! `{"seq":N,"ts":MICROS,"pad":"…"}`. `seq` is the message's identity for the exactly-once
//! check; `ts` is the wall-clock send time for end-to-end latency (producer and consumer
//! share this machine's clock). The padding is pseudo-random letters and digits, so zstd
//! gets about what it would from opaque data (roughly 6 bits of entropy per byte), not the
//! easy wins of repeated text: the broker's compressed segments get no unfair advantage.

use std::time::{SystemTime, UNIX_EPOCH};

use serde::Deserialize;

/// 64 symbols, so one random byte picks one by its low six bits.
const PAD_ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/// One push request's worth of messages, all for one partition.
#[derive(Debug, Clone)]
pub struct Batch {
    /// Index of the partition (0-based; the broker sees it as `p<index>`).
    pub partition: usize,
    /// The messages in order.
    pub messages: Vec<Message>,
}

/// One message as produced.
#[derive(Debug, Clone)]
pub struct Message {
    /// The identity the verifier checks.
    pub seq: u64,
    /// The JSON document.
    pub json: String,
}

/// The two fields a consumer reads back from a payload (the padding is skipped).
#[derive(Debug, Deserialize)]
pub struct Stamp {
    /// The message's sequence number.
    pub seq: u64,
    /// Send time, microseconds since the Unix epoch.
    pub ts: u64,
}

/// What every phase's batches look like.
#[derive(Debug, Clone)]
pub struct Workload {
    /// Messages per push.
    pub batch: u64,
    /// Partitions, used round robin by push index.
    pub partitions: usize,
    /// Bytes per payload document.
    pub payload: usize,
}

impl Workload {
    /// Batch number `k` of a phase whose messages start at `first` and stop before `end`:
    /// `None` once the phase has no messages left.
    pub fn batch(&self, first: u64, end: u64, k: u64) -> Option<Batch> {
        let start = first.checked_add(k.checked_mul(self.batch)?)?;
        if start >= end {
            return None;
        }
        let stop = (start + self.batch).min(end);
        let ts = now_micros();
        Some(Batch {
            partition: (k % self.partitions as u64) as usize,
            messages: (start..stop)
                .map(|seq| Message {
                    seq,
                    json: payload(seq, ts, self.payload),
                })
                .collect(),
        })
    }
}

/// The payload document of message `seq` sent at `ts`, exactly `size` bytes long (or the
/// bare fields when `size` is smaller than they are).
pub fn payload(seq: u64, ts: u64, size: usize) -> String {
    let head = format!("{{\"seq\":{seq},\"ts\":{ts},\"pad\":\"");
    let pad = size.saturating_sub(head.len() + 2);
    let mut out = String::with_capacity(head.len() + pad + 2);
    out.push_str(&head);
    let mut state = seq.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ ts ^ 0xD1B5_4A32_D192_ED03;
    let mut left = pad;
    while left > 0 {
        // xorshift64*: cheap, and plenty random for padding.
        state ^= state >> 12;
        state ^= state << 25;
        state ^= state >> 27;
        let word = state.wrapping_mul(0x2545_F491_4F6C_DD1D).to_le_bytes();
        for &b in word.iter().take(left) {
            out.push(PAD_ALPHABET[(b & 63) as usize] as char);
        }
        left = left.saturating_sub(8);
    }
    out.push_str("\"}");
    out
}

/// Wall-clock microseconds since the Unix epoch.
pub fn now_micros() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_micros() as u64)
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payloads_have_the_exact_size_and_read_back_their_stamp() {
        for size in [64, 100, 1024, 10 * 1024] {
            let json = payload(123_456, 1_700_000_000_000_000, size);
            assert_eq!(json.len(), size);
            let stamp: Stamp = serde_json::from_str(&json).unwrap();
            assert_eq!((stamp.seq, stamp.ts), (123_456, 1_700_000_000_000_000));
        }
    }

    #[test]
    fn padding_differs_between_messages_so_it_does_not_compress_away() {
        let a = payload(1, 5, 1024);
        let b = payload(2, 5, 1024);
        assert_ne!(a[30..], b[30..]);
        let many: String = (0..100).map(|i| payload(i, 5, 1024)).collect();
        let packed = zstd::bulk::compress(many.as_bytes(), 1).unwrap();
        assert!(
            packed.len() > many.len() * 6 / 10,
            "padding compressed to {} of {} bytes",
            packed.len(),
            many.len()
        );
    }

    #[test]
    fn batches_cover_the_phase_once_and_rotate_partitions() {
        let w = Workload {
            batch: 10,
            partitions: 3,
            payload: 64,
        };
        let seqs: Vec<u64> = (0..)
            .map_while(|k| w.batch(100, 125, k))
            .flat_map(|b| b.messages.into_iter().map(|m| m.seq))
            .collect();
        assert_eq!(seqs, (100..125).collect::<Vec<_>>());
        let parts: Vec<usize> = (0..4)
            .filter_map(|k| w.batch(0, 1000, k))
            .map(|b| b.partition)
            .collect();
        assert_eq!(parts, vec![0, 1, 2, 0]);
        assert!(w.batch(0, 30, 3).is_none());
    }
}
