//! The hot-list ring: partitions a group actor believes hold messages for its group.
//!
//! FIFO with set membership, so a partition is in the ring at most once and is offered
//! round-robin. Removal is lazy: each entry carries the generation it was pushed with, and
//! an entry whose generation is no longer the member's is skipped when reached.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

/// A partition as the actors know it: its id (what SQL claims by) and its name.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct PartitionRef {
    /// `log_partitions.id`.
    pub id: i64,
    /// The partition's name.
    pub name: Arc<str>,
}

/// The ring of candidate partitions.
#[derive(Debug, Default)]
pub struct Ring {
    order: VecDeque<(u64, PartitionRef)>,
    members: HashMap<i64, u64>,
    generation: u64,
}

impl Ring {
    /// Appends a partition unless it is already in the ring; true when it was added.
    pub fn push(&mut self, partition: PartitionRef) -> bool {
        if self.members.contains_key(&partition.id) {
            return false;
        }
        self.generation += 1;
        self.members.insert(partition.id, self.generation);
        self.order.push_back((self.generation, partition));
        true
    }

    /// Takes up to `k` partitions from the front (they leave the ring until checked in).
    pub fn take(&mut self, k: usize) -> Vec<PartitionRef> {
        let mut out = Vec::with_capacity(k.min(self.members.len()));
        while out.len() < k {
            let Some((generation, p)) = self.order.pop_front() else {
                break;
            };
            if self.members.get(&p.id) == Some(&generation) {
                self.members.remove(&p.id);
                out.push(p);
            }
        }
        out
    }

    /// Forgets a partition (e.g. a push started its windowBuffer hold).
    pub fn remove(&mut self, id: i64) -> bool {
        let removed = self.members.remove(&id).is_some();
        if self.order.len() > 2 * self.members.len() + 64 {
            let members = &self.members;
            self.order
                .retain(|(generation, p)| members.get(&p.id) == Some(generation));
        }
        removed
    }

    /// True when the partition is in the ring.
    pub fn contains(&self, id: i64) -> bool {
        self.members.contains_key(&id)
    }

    /// Partitions in the ring.
    pub fn len(&self) -> usize {
        self.members.len()
    }

    /// True when nothing is ready.
    pub fn is_empty(&self) -> bool {
        self.members.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(id: i64) -> PartitionRef {
        PartitionRef {
            id,
            name: format!("p{id}").into(),
        }
    }

    #[test]
    fn a_partition_is_in_the_ring_once_and_comes_out_in_order() {
        let mut ring = Ring::default();
        assert!(ring.push(p(1)));
        assert!(ring.push(p(2)));
        assert!(!ring.push(p(1)));
        assert_eq!(ring.take(5), vec![p(1), p(2)]);
        assert!(ring.is_empty());
    }

    #[test]
    fn removed_partitions_are_skipped_and_can_come_back() {
        let mut ring = Ring::default();
        for id in 1..=3 {
            ring.push(p(id));
        }
        assert!(ring.remove(2));
        assert_eq!(ring.take(1), vec![p(1)]);
        ring.push(p(2));
        assert_eq!(ring.take(5), vec![p(3), p(2)]);
    }
}
