//! One checked call on an ephemeral queue and its answer, as plain data: the HTTP routes
//! build a [`Call`], the engine of the queue's owner node runs it, and when the owner is
//! another node both travel over the mesh (`src/mesh/message.rs`).

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use super::inputs::{group_name, partition_name, queue_name, AckEntry, PopRequest};
use super::options::EphemeralOptions;

/// A call on one queue.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Call {
    /// Store the declaration and apply it.
    Configure {
        /// The queue.
        queue: String,
        /// The checked options.
        options: EphemeralOptions,
    },
    /// Drop every message, lease and cursor.
    Reset {
        /// The queue.
        queue: String,
    },
    /// Drop the contents and the declaration.
    Delete {
        /// The queue.
        queue: String,
    },
    /// Append messages, all or nothing.
    Push {
        /// The queue.
        queue: String,
        /// The partition (`Default` when none).
        partition: Option<String>,
        /// Each message's payload as JSON text.
        payloads: Vec<Arc<str>>,
    },
    /// Take messages, maybe waiting.
    Pop(PopRequest),
    /// Settle delivered messages.
    Ack {
        /// The queue.
        queue: String,
        /// The consumer group (`__QUEUE_MODE__` for queue mode).
        group: String,
        /// The acks, in order.
        acks: Vec<AckEntry>,
    },
    /// The queue's gauges.
    Depth {
        /// The queue.
        queue: String,
    },
    /// The queues the receiving node holds for the tenant, with its gauges: a `queues`
    /// listing asks every node, because each holds only the queues it owns.
    Held,
}

impl Call {
    /// The queue the call is about (what picks the owner node).
    pub fn queue(&self) -> &str {
        match self {
            Call::Configure { queue, .. }
            | Call::Reset { queue }
            | Call::Delete { queue }
            | Call::Push { queue, .. }
            | Call::Ack { queue, .. }
            | Call::Depth { queue } => queue,
            Call::Pop(pop) => &pop.queue,
            Call::Held => "",
        }
    }

    /// Whether a call that came from a peer holds only what the HTTP edge would have let
    /// through: valid names, payloads that are JSON (they are answered as they are).
    pub fn is_sound(&self) -> bool {
        if matches!(self, Call::Held) {
            return true;
        }
        let names = queue_name(Some(self.queue())).is_ok();
        names
            && match self {
                Call::Push {
                    partition,
                    payloads,
                    ..
                } => {
                    partition_name(partition.as_deref()).is_ok()
                        && payloads
                            .iter()
                            .all(|p| serde_json::from_str::<&RawValue>(p).is_ok())
                }
                Call::Pop(pop) => {
                    partition_name(pop.partition.as_deref()).is_ok()
                        && group_name(Some(&pop.group)).is_ok()
                }
                Call::Ack { group, .. } => group_name(Some(group)).is_ok(),
                _ => true,
            }
    }
}

/// A call's answer: the HTTP status, the JSON body, and whether to add `Retry-After`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Answer {
    /// The HTTP status.
    pub status: u16,
    /// The JSON body, as text.
    pub body: String,
    /// Whether the answer carries `Retry-After: 1` (a 429 or a 503).
    pub retry_after: bool,
}

impl Answer {
    /// A 2xx answer.
    pub fn ok(status: u16, body: serde_json::Value) -> Self {
        Answer {
            status,
            body: body.to_string(),
            retry_after: false,
        }
    }

    /// An error answer in the `{error, reason, detail}` envelope.
    pub fn error(status: u16, error: &str, reason: &str, detail: impl Into<String>) -> Self {
        Answer {
            status,
            body: serde_json::json!({"error": error, "reason": reason, "detail": detail.into()})
                .to_string(),
            retry_after: status == 429 || status == 503,
        }
    }
}
