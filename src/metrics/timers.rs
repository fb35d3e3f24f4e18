//! What the timers' fire loop did on this node, for `/metrics`: timers fired, fires that
//! could not push (their timers backed off), and the pending timers of every tenant as the
//! loop last counted them. Each fired timer's lateness (fired − deliverAt) goes to the
//! process's `queen_timer_lateness_seconds` histogram ([`super::latency`]).

use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};

use serde_json::{json, Value};

use super::latency::latency;

/// The fire loop's counters.
#[derive(Debug, Default)]
pub struct TimerStats {
    fired: AtomicU64,
    failed_fires: AtomicU64,
    pending: AtomicI64,
}

impl TimerStats {
    /// One timer became a message, `late_ms` after its deliverAt.
    pub fn fired(&self, late_ms: f64) {
        self.fired.fetch_add(1, Ordering::Relaxed);
        latency()
            .timer_lateness
            .observe((late_ms / 1000.0).max(0.0));
    }

    /// A fire rolled back (its timers back off).
    pub fn failed_fire(&self) {
        self.failed_fires.fetch_add(1, Ordering::Relaxed);
    }

    /// The pending count the loop read.
    pub fn set_pending(&self, pending: i64) {
        self.pending.store(pending, Ordering::Relaxed);
    }

    /// The `timers` object of the `/metrics` snapshot.
    pub fn to_json(&self) -> Value {
        json!({
            "fired": self.fired.load(Ordering::Relaxed),
            "failedFires": self.failed_fires.load(Ordering::Relaxed),
            "pending": self.pending.load(Ordering::Relaxed),
        })
    }
}
