//! The revisit wheel: partitions held back (windowBuffer, delayedProcessing, another
//! worker's lease) with the time to look at them again.
//!
//! One entry per partition; scheduling again replaces the time (a new push restarts a
//! windowBuffer quiet period). The group actor's tick moves due entries into the ring.

use std::collections::{BTreeMap, HashMap};
use std::time::Instant;

use super::ring::PartitionRef;

/// Partitions waiting for a time.
#[derive(Debug, Default)]
pub struct Wheel {
    due: BTreeMap<(Instant, u64), PartitionRef>,
    at: HashMap<i64, (Instant, u64)>,
    seq: u64,
}

impl Wheel {
    /// Schedules (or reschedules) a partition for `when`.
    pub fn schedule(&mut self, partition: PartitionRef, when: Instant) {
        if let Some(old) = self.at.remove(&partition.id) {
            self.due.remove(&old);
        }
        self.seq += 1;
        let key = (when, self.seq);
        self.at.insert(partition.id, key);
        self.due.insert(key, partition);
    }

    /// When a partition is due, if it is on the wheel.
    pub fn due_at(&self, id: i64) -> Option<Instant> {
        self.at.get(&id).map(|(t, _)| *t)
    }

    /// Removes and returns every partition due at or before `now`, earliest first.
    pub fn pop_due(&mut self, now: Instant) -> Vec<PartitionRef> {
        let mut out = Vec::new();
        while let Some(entry) = self.due.first_entry() {
            if entry.key().0 > now {
                break;
            }
            let partition = entry.remove();
            self.at.remove(&partition.id);
            out.push(partition);
        }
        out
    }

    /// Takes a partition off the wheel.
    pub fn remove(&mut self, id: i64) {
        if let Some(key) = self.at.remove(&id) {
            self.due.remove(&key);
        }
    }

    /// Partitions on the wheel.
    pub fn len(&self) -> usize {
        self.at.len()
    }

    /// True when nothing is scheduled.
    pub fn is_empty(&self) -> bool {
        self.at.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn p(id: i64) -> PartitionRef {
        PartitionRef {
            id,
            name: format!("p{id}").into(),
        }
    }

    #[test]
    fn due_partitions_come_out_in_time_order_and_a_reschedule_replaces_the_time() {
        let now = Instant::now();
        let mut wheel = Wheel::default();
        wheel.schedule(p(1), now + Duration::from_millis(30));
        wheel.schedule(p(2), now + Duration::from_millis(10));
        wheel.schedule(p(3), now + Duration::from_millis(20));
        wheel.schedule(p(3), now + Duration::from_millis(50));
        assert_eq!(wheel.len(), 3);
        assert_eq!(
            wheel.pop_due(now + Duration::from_millis(35)),
            vec![p(2), p(1)]
        );
        assert!(wheel.pop_due(now + Duration::from_millis(40)).is_empty());
        assert_eq!(wheel.pop_due(now + Duration::from_millis(50)), vec![p(3)]);
        assert!(wheel.is_empty());
    }
}
