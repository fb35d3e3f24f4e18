//! What a push carries and what it is answered with: the items as validated at the edge, a
//! client's precompressed groups, and each item's verdict.
//!
//! These are plain data shared by the HTTP decoders, the push path (`log::push`) and the
//! push spool (`spool`), so none of them has to import another for its types.

use std::sync::Arc;

use uuid::Uuid;

use super::{PartitionName, QueueName};

/// One message to store.
#[derive(Debug, Clone)]
pub struct PushItem {
    /// Target queue (created when missing).
    pub queue: QueueName,
    /// Target partition (created when missing).
    pub partition: PartitionName,
    /// One JSON document.
    pub payload: Vec<u8>,
    /// Dedup key; the broker mints one (the message id's text) when absent.
    pub transaction_id: Option<String>,
    /// Trace correlation id.
    pub trace_id: Option<Uuid>,
    /// Who pushed it: the verified token's `sub` with authentication on (never the body's
    /// word), stored in the message's frame (flag 2) and shown by pops and admin views.
    pub producer: Option<Arc<str>>,
}

/// A client-compressed group (`QPB1` flag 8): the frames of `items[first..first + n]`, with
/// the client's message ids, as one zstd frame. The caller has validated every frame, and
/// the items carry the same transaction ids, trace ids and payloads as the frames.
#[derive(Debug, Clone)]
pub struct PrebuiltSegment {
    /// Index of the group's first item.
    pub first: usize,
    /// The client-minted message ids, in frame order (kept: retries resend the same ids).
    pub message_ids: Vec<Uuid>,
    /// The zstd frame as the client sent it.
    pub bytes: Vec<u8>,
}

/// The verdict on one pushed item.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PushStatus {
    /// Stored.
    Queued,
    /// Its transaction id was already stored in the partition (or earlier in the request).
    Duplicate,
    /// Not stored: the queue holds `maxSize` messages already, or would with these.
    Full {
        /// The queue's `maxSize`.
        max_size: i32,
    },
}

impl PushStatus {
    /// The `status` of the item's answer (`failed` when not stored: contract §2.1).
    pub fn wire(&self) -> &'static str {
        match self {
            PushStatus::Queued => "queued",
            PushStatus::Duplicate => "duplicate",
            PushStatus::Full { .. } => "failed",
        }
    }

    /// The item's `error` text, for an item that was not stored.
    pub fn error(&self) -> Option<String> {
        match self {
            PushStatus::Full { max_size } => Some(format!(
                "queue is full: maxSize is {max_size} messages and this push would exceed it"
            )),
            _ => None,
        }
    }
}

/// The answer for one item, in request order.
#[derive(Debug, Clone)]
pub struct PushOutcome {
    /// Stored or duplicate.
    pub status: PushStatus,
    /// The effective transaction id.
    pub transaction_id: String,
    /// The stored message's id (the existing one for a duplicate).
    pub message_id: Uuid,
    /// The partition's id.
    pub partition_id: i64,
    /// The message's offset in its partition.
    pub offset: i64,
    /// `txn_key` of the transaction id (what the partition's dedup window holds).
    pub txn_key: i64,
    /// The queue's dedup window in seconds as the append saw it (0: off, or a duplicate).
    pub dedup_window_secs: i32,
}
