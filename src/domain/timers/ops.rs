//! A checked timers call: what each op does, in the normalised form
//! `queen.timers_apply_v1` reads.

use base64::Engine;
use serde_json::{json, Value};
use uuid::Uuid;

use crate::domain::{PartitionName, QueueName};

/// One checked op.
#[derive(Debug, Clone)]
pub struct TimerOp {
    /// The queue the timer's message goes to.
    pub queue: QueueName,
    /// The timer's key within the queue (may hold `/`).
    pub key: String,
    /// What the op does.
    pub kind: TimerOpKind,
}

/// What an op does.
#[derive(Debug, Clone)]
pub enum TimerOpKind {
    /// `schedule` or `reschedule` (the same upsert; the flag only keeps the caller's word).
    Schedule {
        /// Whether the caller said `reschedule`.
        reschedule: bool,
        /// The message's bytes: one JSON document.
        payload: Vec<u8>,
        /// Milliseconds from PostgreSQL's now to the delivery (0 or less: at once).
        delay_ms: i64,
        /// The message's `transactionId`.
        txn: String,
        /// The partition the message goes to.
        partition: PartitionName,
        /// The id the message will have, promised in the answer.
        message_id: Uuid,
    },
    /// `cancel`, with the caller's `txn` to echo on `absent`.
    Cancel {
        /// The txn the caller sent, if any.
        txn: Option<String>,
    },
}

impl TimerOp {
    /// A cancel of `key` in `queue` (the `DELETE` route's one op).
    pub fn cancel(queue: QueueName, key: String, txn: Option<String>) -> Self {
        TimerOp {
            queue,
            key,
            kind: TimerOpKind::Cancel { txn },
        }
    }

    /// The op as `queen.timers_apply_v1` reads it.
    pub fn to_sql_json(&self) -> Value {
        match &self.kind {
            TimerOpKind::Schedule {
                reschedule,
                payload,
                delay_ms,
                txn,
                partition,
                message_id,
            } => json!({
                "op": if *reschedule { "reschedule" } else { "schedule" },
                "queue": self.queue.as_str(),
                "key": self.key,
                "payload": base64::engine::general_purpose::STANDARD.encode(payload),
                "delayMs": delay_ms,
                "txn": txn,
                "partition": partition.as_str(),
                "messageId": message_id,
            }),
            TimerOpKind::Cancel { txn } => json!({
                "op": "cancel",
                "queue": self.queue.as_str(),
                "key": self.key,
                "txn": txn,
            }),
        }
    }
}

/// A checked call: its ops in order, no key twice.
#[derive(Debug, Clone, Default)]
pub struct TimerBatch {
    /// The ops, in the caller's order.
    pub ops: Vec<TimerOp>,
}

impl TimerBatch {
    /// The ops as the jsonb array `queen.timers_apply_v1` takes.
    pub fn to_sql_json(&self) -> Value {
        Value::Array(self.ops.iter().map(TimerOp::to_sql_json).collect())
    }

    /// The shortest delay among the schedules, in milliseconds (negative ones as 0): what
    /// this node's fire loop must wake for once the call commits.
    pub fn earliest_delay_ms(&self) -> Option<i64> {
        self.ops
            .iter()
            .filter_map(|op| match &op.kind {
                TimerOpKind::Schedule { delay_ms, .. } => Some((*delay_ms).max(0)),
                TimerOpKind::Cancel { .. } => None,
            })
            .min()
    }
}
