//! The exactly-once check: every message pushed in a phase must reach every consumer group
//! once, no more, no less, and nothing else may arrive.
//!
//! Messages are identified by the sequence number the producer wrote into the payload, so the
//! check does not trust any id the system under test minted.

use serde::{Deserialize, Serialize};

/// How many lost or duplicated ids a report lists by name.
const LISTED_IDS: usize = 10;

/// Delivery counts of one phase's messages, per consumer group.
#[derive(Debug)]
pub struct Verifier {
    first: u64,
    expected: u64,
    /// seen[group][seq - first]: deliveries so far (saturating).
    seen: Vec<Vec<u8>>,
    distinct: Vec<u64>,
    duplicates: Vec<u64>,
    unexpected: Vec<u64>,
}

/// What a phase delivered, judged.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VerifyReport {
    /// Consumer groups checked (queue mode counts as one).
    pub groups: usize,
    /// Messages pushed (each group must see each once).
    pub expected: u64,
    /// Deliveries counted, all groups together, duplicates included.
    pub delivered: u64,
    /// (group, message) pairs never delivered.
    pub lost: u64,
    /// Deliveries beyond the first of a (group, message).
    pub duplicates: u64,
    /// Deliveries of ids that were never pushed in this phase.
    pub unexpected: u64,
    /// Some lost sequence numbers, for the record.
    pub lost_ids: Vec<u64>,
    /// Some duplicated sequence numbers, for the record.
    pub duplicate_ids: Vec<u64>,
}

impl VerifyReport {
    /// True when every group got every message exactly once and nothing else.
    pub fn exactly_once(&self) -> bool {
        self.lost == 0 && self.duplicates == 0 && self.unexpected == 0
    }
}

impl Verifier {
    /// Expects messages `first .. first + expected` in each of `groups` groups.
    pub fn new(first: u64, expected: u64, groups: usize) -> Self {
        let groups = groups.max(1);
        let len = usize::try_from(expected).expect("a phase's message count fits in memory");
        Self {
            first,
            expected,
            seen: vec![vec![0; len]; groups],
            distinct: vec![0; groups],
            duplicates: vec![0; groups],
            unexpected: vec![0; groups],
        }
    }

    /// Records one delivery of `seq` to `group`.
    pub fn record(&mut self, group: usize, seq: u64) {
        let slot = seq
            .checked_sub(self.first)
            .filter(|i| *i < self.expected)
            .map(|i| i as usize);
        let Some(i) = slot else {
            self.unexpected[group] += 1;
            return;
        };
        let count = &mut self.seen[group][i];
        if *count == 0 {
            self.distinct[group] += 1;
        } else {
            self.duplicates[group] += 1;
        }
        *count = count.saturating_add(1);
    }

    /// True when `group` has seen every expected message at least once.
    pub fn group_complete(&self, group: usize) -> bool {
        self.distinct[group] == self.expected
    }

    /// True when every group has.
    pub fn complete(&self) -> bool {
        (0..self.seen.len()).all(|g| self.group_complete(g))
    }

    /// Distinct (group, message) deliveries so far.
    pub fn distinct_total(&self) -> u64 {
        self.distinct.iter().sum()
    }

    /// The verdict.
    pub fn report(&self) -> VerifyReport {
        let mut lost_ids = Vec::new();
        let mut duplicate_ids = Vec::new();
        for group in &self.seen {
            for (i, &count) in group.iter().enumerate() {
                let seq = self.first + i as u64;
                if count == 0 && lost_ids.len() < LISTED_IDS {
                    lost_ids.push(seq);
                }
                if count > 1 && duplicate_ids.len() < LISTED_IDS {
                    duplicate_ids.push(seq);
                }
            }
        }
        let groups = self.seen.len();
        let duplicates: u64 = self.duplicates.iter().sum();
        let unexpected: u64 = self.unexpected.iter().sum();
        VerifyReport {
            groups,
            expected: self.expected,
            delivered: self.distinct_total() + duplicates + unexpected,
            lost: self.expected * groups as u64 - self.distinct_total(),
            duplicates,
            unexpected,
            lost_ids,
            duplicate_ids,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn deliver_all(v: &mut Verifier, groups: usize, first: u64, n: u64) {
        for g in 0..groups {
            for seq in first..first + n {
                v.record(g, seq);
            }
        }
    }

    #[test]
    fn a_clean_run_in_every_group_is_exactly_once() {
        let mut v = Verifier::new(1000, 50, 3);
        deliver_all(&mut v, 3, 1000, 50);
        assert!(v.complete());
        let r = v.report();
        assert!(r.exactly_once(), "{r:?}");
        assert_eq!(r.delivered, 150);
    }

    #[test]
    fn an_injected_loss_is_caught_and_named() {
        let mut v = Verifier::new(0, 100, 2);
        for g in 0..2 {
            for seq in 0..100 {
                if !(g == 1 && seq == 42) {
                    v.record(g, seq);
                }
            }
        }
        assert!(v.group_complete(0));
        assert!(!v.group_complete(1));
        assert!(!v.complete());
        let r = v.report();
        assert!(!r.exactly_once());
        assert_eq!((r.lost, r.duplicates, r.unexpected), (1, 0, 0));
        assert_eq!(r.lost_ids, vec![42]);
    }

    #[test]
    fn an_injected_duplicate_is_caught_even_when_every_message_arrived() {
        let mut v = Verifier::new(0, 100, 1);
        deliver_all(&mut v, 1, 0, 100);
        v.record(0, 7);
        assert!(v.complete(), "completeness alone cannot see a duplicate");
        let r = v.report();
        assert!(!r.exactly_once());
        assert_eq!((r.lost, r.duplicates, r.unexpected), (0, 1, 0));
        assert_eq!(r.duplicate_ids, vec![7]);
        assert_eq!(r.delivered, 101);
    }

    #[test]
    fn ids_from_outside_the_phase_are_unexpected_not_counted_as_progress() {
        let mut v = Verifier::new(100, 10, 1);
        v.record(0, 99);
        v.record(0, 110);
        assert_eq!(v.distinct_total(), 0);
        let r = v.report();
        assert_eq!((r.lost, r.unexpected), (10, 2));
        assert!(!r.exactly_once());
    }
}
