//! The engine's node-wide counters that only grow while the process lives, as Prometheus
//! counters must: the losses and refusals of queues this node no longer holds (deleted, or
//! moved to another owner; the held queues' own are added when read), and the calls this
//! node forwarded to an owner over the mesh.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use serde_json::{json, Value};

use super::ring::Losses;
use crate::domain::ephemeral::Call;

/// See the module comment.
#[derive(Debug, Default)]
pub struct Counters {
    retired: Mutex<(Losses, u64)>,
    forwarded_push: AtomicU64,
    forwarded_pop: AtomicU64,
    forwarded_ack: AtomicU64,
}

impl Counters {
    /// Keeps the losses and refusals of a queue this node stops holding.
    pub fn retire(&self, losses: Losses, refused: u64) {
        let mut retired = self.retired.lock().expect("ephemeral counters lock");
        retired.0.dropped += losses.dropped;
        retired.0.expired += losses.expired;
        retired.0.retries_exhausted += losses.retries_exhausted;
        retired.1 += refused;
    }

    /// The losses and refusals of the queues this node no longer holds.
    pub fn retired(&self) -> (Losses, u64) {
        *self.retired.lock().expect("ephemeral counters lock")
    }

    /// Counts a push, pop or ack this node sends to the queue's owner.
    pub fn forwarding(&self, call: &Call) {
        let counter = match call {
            Call::Push { .. } => &self.forwarded_push,
            Call::Pop(_) => &self.forwarded_pop,
            Call::Ack { .. } => &self.forwarded_ack,
            _ => return,
        };
        counter.fetch_add(1, Ordering::Relaxed);
    }

    /// `{push, pop, ack}`: calls forwarded so far.
    pub fn forwarded_json(&self) -> Value {
        json!({
            "push": self.forwarded_push.load(Ordering::Relaxed),
            "pop": self.forwarded_pop.load(Ordering::Relaxed),
            "ack": self.forwarded_ack.load(Ordering::Relaxed),
        })
    }
}
