//! The wake gate: long-polls parked on one group, and what opens it.
//!
//! A parked pop holds a receiver and nothing else (no permit, no connection). Opening the
//! gate wakes every parked pop at once; each re-asks the actor for work, and those that
//! find none park again. A wake that is lost costs the parked pop one backoff interval.

use tokio::sync::oneshot;

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
}

/// Parked long-polls of one group.
#[derive(Debug, Default)]
pub struct WakeGate {
    parked: Vec<oneshot::Sender<WakeSource>>,
}

impl WakeGate {
    /// Parks a pop; the receiver resolves on the next wake.
    pub fn park(&mut self) -> oneshot::Receiver<WakeSource> {
        let (tx, rx) = oneshot::channel();
        if self.parked.len() > 64 && self.parked.len().is_power_of_two() {
            self.parked.retain(|s| !s.is_closed());
        }
        self.parked.push(tx);
        rx
    }

    /// Wakes every parked pop that is still waiting; returns how many.
    pub fn open(&mut self, source: WakeSource) -> usize {
        self.parked
            .drain(..)
            .filter_map(|s| s.send(source).ok())
            .count()
    }

    /// Parked pops still waiting (forgets those whose pop went away).
    pub fn waiting(&mut self) -> usize {
        self.parked.retain(|s| !s.is_closed());
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
}
