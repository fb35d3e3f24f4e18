//! One consumer group's place in one ring: the next message it has not seen, and the
//! messages delivered to it and not yet acked (leases), each with its attempt count and the
//! instant it is due again. Competing consumers of a group share its cursor; every group
//! has its own (fan-out).

use std::collections::BTreeMap;
use std::time::Instant;

/// A delivered, unacked message of one group.
#[derive(Debug, Clone, Copy)]
pub struct Lease {
    /// Deliveries so far.
    pub attempts: u32,
    /// When it is due for redelivery (now or earlier: ready at the next pop).
    pub due: Instant,
}

/// A group's cursor over one ring.
#[derive(Debug, Default)]
pub struct Cursor {
    /// The sequence number of the first message this group has not been handed.
    pub next: u64,
    /// Delivered and not yet acked, by sequence number.
    pub leases: BTreeMap<u64, Lease>,
}

impl Cursor {
    /// A cursor starting at `head`, the oldest message the ring holds.
    pub fn at(head: u64) -> Self {
        Cursor {
            next: head,
            leases: BTreeMap::new(),
        }
    }

    /// The oldest message this group still needs: its oldest lease, else its next.
    pub fn low(&self) -> u64 {
        self.leases
            .keys()
            .next()
            .map_or(self.next, |&seq| seq.min(self.next))
    }

    /// Forgets what lies before `head` (dropped or expired messages): the cursor moves
    /// up to it and leases on them end.
    pub fn catch_up(&mut self, head: u64) {
        self.next = self.next.max(head);
        while let Some((&seq, _)) = self.leases.first_key_value() {
            if seq >= head {
                break;
            }
            self.leases.remove(&seq);
        }
    }

    /// The sequence numbers whose leases are due at `now`, oldest first, at most `limit`.
    pub fn due(&self, now: Instant, limit: usize) -> Vec<u64> {
        self.leases
            .iter()
            .filter(|(_, lease)| lease.due <= now)
            .map(|(&seq, _)| seq)
            .take(limit)
            .collect()
    }

    /// The earliest instant a lease falls due, for a waiting pop's timer.
    pub fn next_due(&self) -> Option<Instant> {
        self.leases.values().map(|lease| lease.due).min()
    }
}
