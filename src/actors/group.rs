//! The group actor: one per (tenant, queue, consumer group). It owns the group's hot-list
//! ring, revisit wheel and wake gate; a pop asks it what to do ([`PlanPop`]) and reports
//! back what SQL said about each candidate ([`CheckIn`]).
//!
//! Every handler here is synchronous and touches only in-memory state: database work is
//! done by the pop that received the plan, outside the actor, so the actor never waits and
//! its state never changes under an await. The messages live in [`messages`]; what a plan
//! lends a pop (partitions, a reseed) lives in [`handover`] and gives itself back when
//! dropped, so a pop that goes away at any moment leaves nothing outstanding.

mod handover;
mod messages;

pub use handover::{Loan, ReseedTicket};
pub use messages::*;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use actix::prelude::*;

use super::directory::Directory;
use super::ring::{PartitionRef, Ring};
use super::wake_gate::{WakeGate, WakeSource};
use super::wheel::Wheel;
use super::{heap_return, GroupKey};
use crate::metrics::Metrics;

/// How often the wheel is checked for due partitions while it holds any (an empty wheel
/// runs no timer: ten thousand idle groups would otherwise tick half a million times a
/// second between them).
const WHEEL_TICK: Duration = Duration::from_millis(20);
/// How soon a reseed that was dropped unfinished (its pop went away or its SQL failed) is
/// offered to the next parked pop.
const RESEED_RETRY: Duration = Duration::from_millis(100);
/// Pushed-partition hints kept for the legacy path (older ones are covered by the scan).
const MAX_LEGACY_HINTS: usize = 256;

/// The actor.
pub struct GroupActor {
    key: GroupKey,
    /// Where the registry listed this actor; it crosses itself out there when it stops.
    directory: Arc<Directory<GroupActor>>,
    metrics: Arc<Metrics>,
    hotlist: bool,
    reseed_every: Duration,
    /// With nothing parked, lent or scheduled, the actor stops after this long unused
    /// (`QUEEN_GROUP_IDLE_STOP_MS`), so a name used once costs no memory for long.
    idle_stop: Duration,
    ring: Ring,
    wheel: Wheel,
    gate: WakeGate,
    registered: bool,
    deferral: Option<Deferral>,
    next_reseed: Instant,
    reseeding: bool,
    /// The last reseed was cut at its limit and put partitions in the ring: when the ring
    /// runs dry, reseed at once instead of at `next_reseed` (a queue with more pending
    /// partitions than one reseed takes would otherwise stall its pops for up to
    /// `reseed_every` each time a reseed's worth is consumed).
    reseed_more: bool,
    pending: HashMap<i64, i64>,
    window_until: HashMap<i64, Instant>,
    hints: Vec<PartitionRef>,
    lent: usize,
    last_used: Instant,
    /// When a pop was last told to write the group's `last_seen_at` ([`Seen`]).
    seen_written: Option<Instant>,
    /// The wheel's tick, running only while the wheel holds partitions.
    ticker: Option<SpawnHandle>,
    /// Wakes one parked pop when the reseed falls due (armed only while pops are parked):
    /// the one timer a group's parked pops share, in place of a re-poll timer each.
    reseed_alarm: Option<SpawnHandle>,
}

impl GroupActor {
    /// A fresh actor: nothing known, so the first pop reseeds. `directory` is where it is
    /// listed (it crosses itself out on stopping); `hotlist`, `reseed_every` and
    /// `idle_stop` are the registry's settings.
    pub fn new(
        key: GroupKey,
        directory: Arc<Directory<GroupActor>>,
        metrics: Arc<Metrics>,
        hotlist: bool,
        reseed_every: Duration,
        idle_stop: Duration,
    ) -> Self {
        GroupActor {
            key,
            directory,
            metrics,
            hotlist,
            reseed_every,
            idle_stop,
            ring: Ring::default(),
            wheel: Wheel::default(),
            gate: WakeGate::default(),
            registered: false,
            deferral: None,
            next_reseed: Instant::now(),
            reseeding: false,
            reseed_more: false,
            pending: HashMap::new(),
            window_until: HashMap::new(),
            hints: Vec::new(),
            lent: 0,
            last_used: Instant::now(),
            seen_written: None,
            ticker: None,
            reseed_alarm: None,
        }
    }

    fn wake(&mut self, source: WakeSource) {
        if self.gate.open(source) > 0 {
            Metrics::bump(source.counter(&self.metrics));
        }
    }

    /// The one way into the ring: a partition inside its windowBuffer quiet period goes
    /// (or stays) on the wheel until the period ends, whoever offers it.
    fn offer(&mut self, partition: PartitionRef) {
        if let Some(until) = self.window_until.get(&partition.id).copied() {
            if until > Instant::now() {
                self.ring.remove(partition.id);
                self.wheel.schedule(partition, until);
                return;
            }
            self.window_until.remove(&partition.id);
        }
        self.wheel.remove(partition.id);
        self.ring.push(partition);
    }

    fn tick(&mut self, ctx: &mut Context<Self>) {
        let due = self.wheel.pop_due(Instant::now());
        if !due.is_empty() {
            for p in due {
                self.offer(p);
            }
            if !self.ring.is_empty() {
                self.wake(WakeSource::Wheel);
            }
        }
        if self.wheel.is_empty() {
            if let Some(ticker) = self.ticker.take() {
                ctx.cancel_future(ticker);
            }
        }
    }

    /// Starts the wheel's tick when the wheel holds partitions and it is not running.
    fn arm_wheel(&mut self, ctx: &mut Context<Self>) {
        if self.ticker.is_none() && !self.wheel.is_empty() {
            self.ticker = Some(ctx.run_interval(WHEEL_TICK, |actor, ctx| actor.tick(ctx)));
        }
    }

    /// Whether a pop asking now should reseed first: a dry ring past the reseed time (or
    /// after a reseed cut at its limit), a reseed long overdue, or an unknown deferral
    /// config.
    fn reseed_due(&self, now: Instant) -> bool {
        self.deferral.is_none()
            || ((now >= self.next_reseed || self.reseed_more) && self.ring.is_empty())
            || now >= self.next_reseed + 2 * self.reseed_every
    }

    /// Arms the reseed alarm, no sooner than `after` from now, when pops are parked and it
    /// is not armed yet.
    fn arm_reseed(&mut self, ctx: &mut Context<Self>, after: Duration) {
        if !self.hotlist || self.reseed_alarm.is_some() || !self.gate.any_parked() {
            return;
        }
        let now = Instant::now();
        let due = if self.deferral.is_none() || self.reseed_more {
            now
        } else {
            self.next_reseed
        };
        let delay = due.saturating_duration_since(now).max(after);
        self.reseed_alarm = Some(ctx.run_later(delay, |actor, ctx| actor.reseed_alarm(ctx)));
    }

    /// Arms the alarm again for a reseed time that moved.
    fn rearm_reseed(&mut self, ctx: &mut Context<Self>) {
        if let Some(alarm) = self.reseed_alarm.take() {
            ctx.cancel_future(alarm);
        }
        self.arm_reseed(ctx, Duration::ZERO);
    }

    /// The alarm rang: wake one parked pop to run the reseed that fell due (the rest stay
    /// parked; what the reseed finds wakes them). A reseed already running re-arms the
    /// alarm when it reports back.
    fn reseed_alarm(&mut self, ctx: &mut Context<Self>) {
        self.reseed_alarm = None;
        if self.reseeding {
            return;
        }
        if self.reseed_due(Instant::now()) {
            if self.gate.open_one(WakeSource::Reseed) {
                Metrics::bump(WakeSource::Reseed.counter(&self.metrics));
            }
            return;
        }
        self.arm_reseed(ctx, Duration::ZERO);
    }

    fn idle(&mut self) -> bool {
        self.lent == 0
            && !self.reseeding
            && self.wheel.is_empty()
            && self.gate.waiting() == 0
            && self.last_used.elapsed() > self.idle_stop
    }
}

impl Actor for GroupActor {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        heap_return::actor_started();
        ctx.run_interval(self.idle_stop / 4, |actor, ctx| {
            if actor.idle() {
                ctx.stop();
            }
        });
    }

    fn stopped(&mut self, ctx: &mut Self::Context) {
        self.directory.forget(&self.key, &ctx.address());
        heap_return::actor_stopped();
    }
}

impl Handler<PlanPop> for GroupActor {
    type Result = MessageResult<PlanPop>;

    fn handle(&mut self, msg: PlanPop, ctx: &mut Self::Context) -> Self::Result {
        self.last_used = Instant::now();
        if !self.hotlist {
            return MessageResult(PopPlan::Legacy {
                hints: std::mem::take(&mut self.hints),
            });
        }
        // A ready ring is served first (a woken pop should not pay for a reseed), unless the
        // reseed is long overdue; an unknown deferral config always reseeds first.
        if self.reseed_due(Instant::now()) && !self.reseeding {
            // The ticket travels in the reply: whoever drops it unfinished (the pop, or
            // the reply itself when the pop is gone) clears `reseeding` again.
            self.reseeding = true;
            return MessageResult(PopPlan::Reseed(ReseedTicket::new(ctx.address())));
        }
        if self.deferral.is_some() && !self.registered {
            return MessageResult(PopPlan::Wildcard);
        }
        if self.ring.is_empty() {
            Metrics::bump(&self.metrics.pops_empty_in_memory);
            let parked = msg.park_if_empty.then(|| self.gate.park());
            self.arm_reseed(ctx, Duration::ZERO);
            return MessageResult(PopPlan::Empty { parked });
        }
        let k = (msg.partitions as usize).saturating_mul(8).clamp(16, 256);
        let partitions = self.ring.take(k);
        self.lent += partitions.len();
        let pending_estimate = partitions
            .iter()
            .map(|p| self.pending.get(&p.id).copied().unwrap_or(i64::MAX / 1024))
            .fold(0i64, i64::saturating_add);
        let deferral = self.deferral.unwrap_or_default();
        MessageResult(PopPlan::Candidates {
            loan: Loan::new(ctx.address(), partitions),
            skip_window: self.deferral.is_some(),
            min_wait: deferral.min_wait,
            pending_estimate,
        })
    }
}

impl Handler<CheckIn> for GroupActor {
    type Result = ();

    fn handle(&mut self, msg: CheckIn, ctx: &mut Self::Context) {
        self.lent = self
            .lent
            .saturating_sub(msg.verdicts.len() + msg.unused.len());
        for p in msg.unused {
            self.offer(p);
        }
        for (p, verdict) in msg.verdicts {
            match verdict {
                Verdict::Claimed {
                    lease_until,
                    pending_after,
                } => {
                    self.pending.insert(p.id, pending_after);
                    match lease_until {
                        Some(until) => self.wheel.schedule(p, until),
                        None if pending_after > 0 => self.offer(p),
                        None => {}
                    }
                }
                Verdict::Drained => {
                    self.pending.remove(&p.id);
                }
                Verdict::Leased(until) | Verdict::Window(until) | Verdict::Delayed(until) => {
                    self.wheel.schedule(p, until)
                }
                Verdict::Busy | Verdict::Skipped => self.offer(p),
            }
        }
        // Pops that found the ring empty while these were lent may now have work.
        if !self.ring.is_empty() {
            self.wake(WakeSource::Returned);
        }
        self.arm_wheel(ctx);
    }
}

impl Handler<Reseeded> for GroupActor {
    type Result = ();

    fn handle(&mut self, msg: Reseeded, ctx: &mut Self::Context) {
        self.reseeding = false;
        let Some(result) = msg.0 else {
            self.arm_reseed(ctx, RESEED_RETRY);
            return;
        };
        self.registered = result.registered;
        self.deferral = Some(result.deferral);
        self.next_reseed = Instant::now() + self.reseed_every;
        let now = Instant::now();
        let ring_before = self.ring.len();
        for found in result.pending {
            let p = found.partition;
            if let Some(until) = found.window_until.filter(|t| *t > now) {
                let later = self
                    .window_until
                    .get(&p.id)
                    .map_or(until, |t| (*t).max(until));
                self.window_until.insert(p.id, later);
            }
            match found.lease_until {
                Some(until) if until > now => self.wheel.schedule(p, until),
                _ if self.wheel.due_at(p.id).is_some() => {}
                _ => self.offer(p),
            }
        }
        // Only a reseed that gave the ring something may be followed at once: one whose
        // partitions were all leased would find the same ones again.
        self.reseed_more = result.truncated && self.ring.len() > ring_before;
        if !self.ring.is_empty() || !self.registered {
            self.wake(WakeSource::Wheel);
        }
        self.arm_wheel(ctx);
        self.rearm_reseed(ctx);
    }
}

impl Handler<WildcardDone> for GroupActor {
    type Result = ();

    fn handle(&mut self, _: WildcardDone, ctx: &mut Self::Context) {
        self.registered = true;
        self.next_reseed = Instant::now();
        self.rearm_reseed(ctx);
    }
}

impl Handler<PushLanded> for GroupActor {
    type Result = ();

    fn handle(&mut self, msg: PushLanded, ctx: &mut Self::Context) {
        let p = msg.partition;
        *self.pending.entry(p.id).or_insert(0) += i64::from(msg.messages);
        if !self.hotlist {
            if !self.hints.contains(&p) && self.hints.len() < MAX_LEGACY_HINTS {
                self.hints.push(p);
            }
        } else {
            match self.deferral {
                Some(d) if !d.window.is_zero() => {
                    // A new segment restarts the quiet period: off the ring until it ends.
                    self.window_until.insert(p.id, Instant::now() + d.window);
                    self.offer(p);
                    self.arm_wheel(ctx);
                    return;
                }
                _ => self.offer(p),
            }
        }
        self.wake(msg.source);
        self.arm_wheel(ctx);
    }
}

impl Handler<AckReleased> for GroupActor {
    type Result = ();

    fn handle(&mut self, msg: AckReleased, ctx: &mut Self::Context) {
        if self.hotlist {
            self.offer(msg.0);
        } else if !self.hints.contains(&msg.0) && self.hints.len() < MAX_LEGACY_HINTS {
            self.hints.push(msg.0);
        }
        self.wake(WakeSource::Ack);
        self.arm_wheel(ctx);
    }
}

impl Handler<Park> for GroupActor {
    type Result = MessageResult<Park>;

    fn handle(&mut self, _: Park, ctx: &mut Self::Context) -> Self::Result {
        self.last_used = Instant::now();
        let parked = self.gate.park();
        self.arm_reseed(ctx, Duration::ZERO);
        MessageResult(parked)
    }
}

impl Handler<Seen> for GroupActor {
    type Result = bool;

    fn handle(&mut self, msg: Seen, _: &mut Self::Context) -> bool {
        let now = Instant::now();
        if self
            .seen_written
            .is_some_and(|at| now.duration_since(at) < msg.every)
        {
            return false;
        }
        self.seen_written = Some(now);
        true
    }
}

impl Handler<ConfigChanged> for GroupActor {
    type Result = ();

    fn handle(&mut self, _: ConfigChanged, ctx: &mut Self::Context) {
        self.deferral = None;
        self.rearm_reseed(ctx);
    }
}

impl Handler<DrainStarted> for GroupActor {
    type Result = ();

    fn handle(&mut self, _: DrainStarted, _: &mut Self::Context) {
        self.gate.release_all();
    }
}

impl Handler<Stats> for GroupActor {
    type Result = MessageResult<Stats>;

    fn handle(&mut self, _: Stats, _: &mut Self::Context) -> Self::Result {
        MessageResult(GroupStats {
            tenant: self.key.tenant.as_str().to_owned(),
            queue: self.key.queue.as_str().to_owned(),
            consumer_group: self.key.group.as_str().to_owned(),
            ring: self.ring.len(),
            wheel: self.wheel.len(),
            lent: self.lent,
            parked: self.gate.waiting(),
            reseeding: self.reseeding,
        })
    }
}

#[cfg(test)]
mod tests;
