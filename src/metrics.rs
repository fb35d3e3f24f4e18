//! Counters of the pop path, the wakes and the pool, served on `GET /metrics`.
//!
//! A leaf: it imports nothing of the broker. Counters take plain numbers, and what they
//! count in the broker's own types (a wake's source, a retention batch, a queue's row) is
//! converted by the caller, so nothing reaches the database or the actors through here.
//!
//! Relaxed atomics: each counter is independent and only ever read for reporting. The
//! Prometheus side is in the submodules: [`latency`] holds the process's histograms,
//! [`sql_spans`] times SQL calls from their tracing spans, and [`exposition`] renders
//! counters, gauges and histograms as typed Prometheus families.

pub mod exposition;
pub mod latency;
pub mod retention;
pub mod sql_spans;
pub mod timers;

use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};

use serde_json::{json, Value};

/// Every counter of the broker.
#[derive(Debug, Default)]
pub struct Metrics {
    /// Pops answered from ring candidates.
    pub pops_from_ring: AtomicU64,
    /// Pops answered empty by the in-memory check (no permit, no connection).
    pub pops_empty_in_memory: AtomicU64,
    /// Pops answered 204 by maintenance mode.
    pub pops_maintenance: AtomicU64,
    /// Calls of `log_pop_wildcard_bin_v2`.
    pub sql_wildcard: AtomicU64,
    /// Calls of `log_pop_list_v2`.
    pub sql_list: AtomicU64,
    /// Single-statement claims tried (a hot-list pop of one partition tries one first).
    pub sql_single: AtomicU64,
    /// Calls of `log_pending_partitions_v1` (reseeds).
    pub sql_reseed: AtomicU64,
    /// Calls of `log_pop_specific_v2`.
    pub sql_specific: AtomicU64,
    /// Calls of `log_pop_discover_wire_v2`.
    pub sql_discover: AtomicU64,
    /// Calls of `log_has_pending_v1`.
    pub sql_has_pending: AtomicU64,
    /// Wakes by local pushes.
    pub wakes_push: AtomicU64,
    /// Wakes by peer hints.
    pub wakes_peer: AtomicU64,
    /// Wakes by ack-promotes.
    pub wakes_ack: AtomicU64,
    /// Wakes by the revisit wheel.
    pub wakes_wheel: AtomicU64,
    /// Wakes by candidates checked back into the ring.
    pub wakes_returned: AtomicU64,
    /// Wakes of one parked pop to run the group's reseed that fell due.
    pub wakes_reseed: AtomicU64,
    /// Long-polls parked right now.
    pub parked: AtomicI64,
    /// Under-full claims held by the minimum pop wait.
    pub min_wait_holds: AtomicU64,
    /// Push requests stored through the push combiner.
    pub push_requests: AtomicU64,
    /// Commits the push combiner made for them (requests / commits = how much it combined).
    pub push_commits: AtomicU64,
    /// Partition appends made by the one-statement append.
    pub push_single_appends: AtomicU64,
    /// Commits of pushes sent with their append statement in one round trip (see
    /// `log::push::store_committed`).
    pub push_alone_commits: AtomicU64,
    /// Partition appends made by `log_push_v3` (the append the one statement declined).
    pub push_function_appends: AtomicU64,
    /// Acks of one (partition, lease) settled by the one-statement whole-lease ack.
    pub acks_whole_lease: AtomicU64,
    /// Of those, acks settled from this node's lease book (the node served the pop).
    pub acks_known_lease: AtomicU64,
    /// Acks of one (partition, lease) settled item by item by `log_ack_v2`.
    pub acks_itemized: AtomicU64,
    /// Streams cycles asked for (`POST /streams/v1/cycle`, `log::streams`).
    pub streams_cycles: AtomicU64,
    /// Of those, cycles that committed nothing: refused (a stale lease, bad input found in
    /// the database) or failed.
    pub streams_cycles_failed: AtomicU64,
    /// What the retention sweeper did on this node.
    pub retention: retention::SweepStats,
    /// What the timers' fire loop did on this node.
    pub timers: timers::TimerStats,
}

impl Metrics {
    /// Adds one to a counter.
    pub fn bump(counter: &AtomicU64) {
        counter.fetch_add(1, Ordering::Relaxed);
    }

    /// Adds `n` to a counter.
    pub fn bump_by(counter: &AtomicU64, n: u64) {
        counter.fetch_add(n, Ordering::Relaxed);
    }

    /// The counters as JSON.
    pub fn to_json(&self) -> Value {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        json!({
            "pops": {
                "fromRing": get(&self.pops_from_ring),
                "emptyInMemory": get(&self.pops_empty_in_memory),
                "maintenance": get(&self.pops_maintenance),
                "parked": self.parked.load(Ordering::Relaxed),
                "minWaitHolds": get(&self.min_wait_holds),
            },
            "sql": {
                "wildcard": get(&self.sql_wildcard),
                "list": get(&self.sql_list),
                "singleClaim": get(&self.sql_single),
                "reseed": get(&self.sql_reseed),
                "specific": get(&self.sql_specific),
                "discover": get(&self.sql_discover),
                "hasPending": get(&self.sql_has_pending),
            },
            "push": {
                "combinedRequests": get(&self.push_requests),
                "commits": get(&self.push_commits),
                "singleStatementAppends": get(&self.push_single_appends),
                "oneRoundTripCommits": get(&self.push_alone_commits),
                "functionAppends": get(&self.push_function_appends),
            },
            "acks": {
                "wholeLease": get(&self.acks_whole_lease),
                "knownLease": get(&self.acks_known_lease),
                "itemized": get(&self.acks_itemized),
            },
            "streams": {
                "cycles": get(&self.streams_cycles),
                "failedCycles": get(&self.streams_cycles_failed),
            },
            "retention": self.retention.to_json(),
            "timers": self.timers.to_json(),
            "wakes": {
                "push": get(&self.wakes_push),
                "peer": get(&self.wakes_peer),
                "ack": get(&self.wakes_ack),
                "wheel": get(&self.wakes_wheel),
                "returned": get(&self.wakes_returned),
                "reseed": get(&self.wakes_reseed),
            },
        })
    }
}
