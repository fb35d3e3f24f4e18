//! The wake gate: long-polls parked on one group, and what opens it.
//!
//! A parked pop holds a receiver and nothing else (no permit, no connection, no timer of
//! the actor's). Opening the gate wakes every parked pop at once; each re-asks the actor
//! for work, and those that find none park again. When the group's reseed falls due the
//! actor wakes only the longest-parked pop ([`WakeGate::open_one`]), which runs it.
//! How long each woken pop was parked is observed in `queen_wake_wait_seconds`.

use std::collections::VecDeque;
use std::sync::atomic::AtomicU64;
use std::time::Instant;

use tokio::sync::oneshot;

use crate::metrics::latency::latency;
use crate::metrics::Metrics;

/// What opened the gate (counted per source on `/metrics`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WakeSource {
    /// A push served by this node.
    Push,
    /// A peer's push hint.
    Peer,
    /// An ack released a partition that still holds messages.
    Ack,
    /// The revisit wheel found a partition due.
    Wheel,
    /// A pop checked lent candidates back into the ring (skipped, busy, or with more left).
    Returned,
    /// The group's reseed fell due while pops were parked: one is woken to run it.
    Reseed,
}

/// Parked long-polls of one group.
#[derive(Debug, Default)]
pub struct WakeGate {
    parked: VecDeque<(oneshot::Sender<WakeSource>, Instant)>,
}

impl WakeSource {
    /// The `source` label of the wake metrics.
    pub fn label(self) -> &'static str {
        match self {
            WakeSource::Push => "push",
            WakeSource::Peer => "peer",
            WakeSource::Ack => "ack",
            WakeSource::Wheel => "wheel",
            WakeSource::Returned => "returned",
            WakeSource::Reseed => "reseed",
        }
    }

    /// The counter of `/metrics` that counts this source's wakes (the sources are ours,
    /// so the choice is made here and the counters stay plain numbers).
    pub fn counter(self, metrics: &Metrics) -> &AtomicU64 {
        match self {
            WakeSource::Push => &metrics.wakes_push,
            WakeSource::Peer => &metrics.wakes_peer,
            WakeSource::Ack => &metrics.wakes_ack,
            WakeSource::Wheel => &metrics.wakes_wheel,
            WakeSource::Returned => &metrics.wakes_returned,
            WakeSource::Reseed => &metrics.wakes_reseed,
        }
    }
}

impl WakeGate {
    /// Parks a pop; the receiver resolves on the next wake.
    pub fn park(&mut self) -> oneshot::Receiver<WakeSource> {
        let (tx, rx) = oneshot::channel();
        if self.parked.len() > 64 && self.parked.len().is_power_of_two() {
            self.parked.retain(|(s, _)| !s.is_closed());
        }
        self.parked.push_back((tx, Instant::now()));
        rx
    }

    /// Wakes every parked pop that is still waiting; returns how many.
    pub fn open(&mut self, source: WakeSource) -> usize {
        if self.parked.is_empty() {
            return 0; // the common case on every push: keep it free of metric lookups
        }
        let waited = latency().wake_wait.with_label_values(&[source.label()]);
        let now = Instant::now();
        self.parked
            .drain(..)
            .filter_map(|(s, since)| s.send(source).ok().map(|()| since))
            .inspect(|since| waited.observe(now.saturating_duration_since(*since).as_secs_f64()))
            .count()
    }

    /// Wakes the longest-parked pop that is still waiting (forgetting those that went away
    /// before it); false when none was.
    pub fn open_one(&mut self, source: WakeSource) -> bool {
        let now = Instant::now();
        while let Some((sender, since)) = self.parked.pop_front() {
            if sender.send(source).is_ok() {
                latency()
                    .wake_wait
                    .with_label_values(&[source.label()])
                    .observe(now.saturating_duration_since(since).as_secs_f64());
                return true;
            }
        }
        false
    }

    /// Lets go of every parked pop's gate without a wake: each wait ends at once, as when
    /// the actor stops (the broker drains, and a pop that finds it draining answers empty).
    pub fn release_all(&mut self) {
        self.parked.clear();
    }

    /// Whether any pop is parked (some may have gone away since; cheaper than
    /// [`WakeGate::waiting`]).
    pub fn any_parked(&self) -> bool {
        !self.parked.is_empty()
    }

    /// Parked pops still waiting (forgets those whose pop went away).
    pub fn waiting(&mut self) -> usize {
        self.parked.retain(|(s, _)| !s.is_closed());
        self.parked.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn opening_the_gate_wakes_every_live_parked_pop_once() {
        let mut gate = WakeGate::default();
        let a = gate.park();
        let b = gate.park();
        drop(gate.park());
        assert_eq!(gate.open(WakeSource::Push), 2);
        assert_eq!(a.await.unwrap(), WakeSource::Push);
        assert_eq!(b.await.unwrap(), WakeSource::Push);
        assert_eq!(gate.open(WakeSource::Wheel), 0);
    }

    #[tokio::test]
    async fn opening_one_wakes_the_longest_parked_live_pop_only() {
        let mut gate = WakeGate::default();
        drop(gate.park());
        let mut first = gate.park();
        let mut second = gate.park();
        assert!(gate.open_one(WakeSource::Reseed));
        assert_eq!(first.try_recv().unwrap(), WakeSource::Reseed);
        assert!(second.try_recv().is_err(), "only one pop is woken");
        assert_eq!(gate.waiting(), 1);
        drop(second);
        assert!(!gate.open_one(WakeSource::Reseed));
        assert_eq!(gate.waiting(), 0);
    }

    #[tokio::test]
    async fn each_woken_pop_records_how_long_it_was_parked_under_its_wake_source() {
        let waited = latency().wake_wait.with_label_values(&["returned"]);
        let before = waited.get_sample_count();
        let mut gate = WakeGate::default();
        let _a = gate.park();
        let _b = gate.park();
        drop(gate.park());

        gate.open(WakeSource::Returned);

        assert_eq!(waited.get_sample_count(), before + 2);
    }
}
