//! The messages a group actor accepts, and the plans and verdicts they carry.
//!
//! Requests are imperative (`PlanPop`, `CheckIn`, `Park`); notifications are past tense
//! (`PushLanded`, `AckReleased`, `Reseeded`, `WildcardDone`, `ConfigChanged`).

use std::time::{Duration, Instant};

use actix::prelude::*;
use tokio::sync::oneshot;

use super::handover::{Loan, ReseedTicket};
use crate::actors::ring::PartitionRef;
use crate::actors::wake_gate::WakeSource;

/// Asks what a pop should do next.
#[derive(Message)]
#[rtype(result = "PopPlan")]
pub struct PlanPop {
    /// Partitions the pop may claim (sizes the candidate list).
    pub partitions: u32,
    /// Park the pop on the wake gate when nothing is ready (in the same step, so no wake
    /// can slip between "empty" and "parked").
    pub park_if_empty: bool,
}

/// What a pop should do.
#[derive(Debug)]
pub enum PopPlan {
    /// Nothing ready: answer empty without a permit or a connection.
    Empty {
        /// Resolves on the next wake when the pop asked to park.
        parked: Option<oneshot::Receiver<WakeSource>>,
    },
    /// The group has not met the queue: use the SQL wildcard pop (it carries the bulk seed).
    Wildcard,
    /// Refresh the ring and the queue's deferral settings from SQL, then ask again; the
    /// ticket carries the result back (or, dropped, says the reseed did not happen).
    Reseed(ReseedTicket),
    /// Claim from these partitions and check the loan back in with SQL's verdicts.
    Candidates {
        /// The lent partitions, in order; dropped unsettled, they go back to the ring.
        loan: Loan,
        /// The wheel is the authority on windowBuffer (the settings are fresh).
        skip_window: bool,
        /// The queue's minimum pop wait (zero: off).
        min_wait: Duration,
        /// Messages the actor believes the ring holds (for the minimum pop wait).
        pending_estimate: i64,
    },
    /// Legacy path (`QUEEN_HOTLIST=0`): try these pushed partitions first, then the scan.
    Legacy {
        /// Partitions pushed since the last legacy pop.
        hints: Vec<PartitionRef>,
    },
}

/// What SQL said about one candidate.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    /// Delivered; leased until `lease_until` (none with auto-ack); `pending_after` remain.
    Claimed {
        /// Lease expiry of the claim.
        lease_until: Option<Instant>,
        /// Messages left behind the claim.
        pending_after: i64,
    },
    /// Nothing for this group.
    Drained,
    /// Another worker's live lease, until then.
    Leased(Instant),
    /// windowBuffer quiet period, until then.
    Window(Instant),
    /// delayedProcessing, until then.
    Delayed(Instant),
    /// Locked by a concurrent pop: try again.
    Busy,
    /// Not tried (budget spent).
    Skipped,
}

/// Returns lent candidates with their verdicts (or unused, when the pop ended early).
/// Sent only by a [`Loan`].
#[derive(Message)]
#[rtype(result = "()")]
pub struct CheckIn {
    /// Candidates SQL gave a verdict on.
    pub verdicts: Vec<(PartitionRef, Verdict)>,
    /// Candidates never tried.
    pub unused: Vec<PartitionRef>,
}

/// The queue's settings that decide when a partition may be offered.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Deferral {
    /// windowBuffer.
    pub window: Duration,
    /// delayedProcessing.
    pub delay: Duration,
    /// min_pop_wait_time.
    pub min_wait: Duration,
}

/// The result of a reseed (`None` when it failed: the next pop tries again). Sent only by
/// a [`ReseedTicket`].
#[derive(Message)]
#[rtype(result = "()")]
pub struct Reseeded(pub Option<ReseedResult>);

/// What `log_pending_partitions_v1` answered.
#[derive(Debug)]
pub struct ReseedResult {
    /// The group has met the queue.
    pub registered: bool,
    /// The queue's settings.
    pub deferral: Deferral,
    /// Partitions that may hold messages.
    pub pending: Vec<PendingRef>,
    /// The reseed found as many partitions as it asks for at most: more may be pending
    /// beyond them, so the ring is worth reseeding as soon as it runs dry.
    pub truncated: bool,
}

/// A partition the reseed found, with what holds it back.
#[derive(Debug)]
pub struct PendingRef {
    /// The partition.
    pub partition: PartitionRef,
    /// A live lease's expiry.
    pub lease_until: Option<Instant>,
    /// The end of its windowBuffer quiet period.
    pub window_until: Option<Instant>,
}

/// The SQL wildcard pop ran, so the group's first-contact seed exists.
#[derive(Message)]
#[rtype(result = "()")]
pub struct WildcardDone;

/// Messages landed in a partition (a local push, or a peer's hint).
#[derive(Message)]
#[rtype(result = "()")]
pub struct PushLanded {
    /// Where.
    pub partition: PartitionRef,
    /// How many messages.
    pub messages: u32,
    /// Who said so.
    pub source: WakeSource,
}

/// An ack released a partition that still holds messages (an ack-promote).
#[derive(Message)]
#[rtype(result = "()")]
pub struct AckReleased(pub PartitionRef);

/// The queue's configuration changed: forget the cached deferral settings (the next pop
/// reseeds them).
#[derive(Message)]
#[rtype(result = "()")]
pub struct ConfigChanged;

/// The broker started draining: the actor lets go of its parked pops' gates, so their
/// waits end now instead of at their deadlines (a parked pop holds no drain registration
/// of its own, README "Parked long-polls").
#[derive(Message)]
#[rtype(result = "()")]
pub struct DrainStarted;

/// Asks for the actor's state, for `/metrics`.
#[derive(Message)]
#[rtype(result = "GroupStats")]
pub struct Stats;

/// One group actor's state.
#[derive(Debug, Clone, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct GroupStats {
    /// The queue's tenant (the metrics show a tenant only its own groups).
    pub tenant: String,
    /// The queue.
    pub queue: String,
    /// The consumer group.
    pub consumer_group: String,
    /// Partitions in the ring.
    pub ring: usize,
    /// Partitions on the wheel.
    pub wheel: usize,
    /// Candidates lent to pops in flight.
    pub lent: usize,
    /// Pops parked on the gate.
    pub parked: usize,
    /// A reseed is planned and its result not yet back.
    pub reseeding: bool,
}

/// A pop of the group found nothing and is about to wait: answers true when the group's
/// `last_seen_at` should be written now (the last answer true is at least `every` ago on
/// this actor), so the idle-group sweep sees a waiting group as active at the cost of one
/// write per `every` per group and node, not one per empty poll.
#[derive(Message)]
#[rtype(result = "bool")]
pub struct Seen {
    /// The least time between two writes.
    pub every: Duration,
}

/// Parks a pop on the wake gate (routes that do not plan through the ring).
#[derive(Message)]
#[rtype(result = "oneshot::Receiver<WakeSource>")]
pub struct Park;
