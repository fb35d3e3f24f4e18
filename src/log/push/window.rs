//! The push's dedup windows: per partition, the transaction-id keys (`txn_key`) stored within the
//! queue's dedup window, held in memory so a push checks its ids without a row per message.
//!
//! PostgreSQL stays the source of truth. A window covers the partition's offsets up to
//! `covered_to`; `queen.log_push_v3` appends only when the partition's last offset (read
//! under its row lock) equals it, and otherwise answers with the segments other writers
//! (other nodes, or this node's concurrent pushes, or earlier appends of the push's own
//! transaction) stored since; the push checks again against them (its overlay,
//! `super::append`). Only committed data enters a window: what a push learned under the lock
//! ([`DedupWindows::learn`]) and its own segments ([`DedupWindows::stored`]), both after its
//! transaction committed, so a rollback teaches a window nothing. A hit is a candidate: the caller compares the stored
//! frame's transaction id before answering `duplicate`.
//!
//! Memory is bounded: segments older than the window are dropped as they are met (and by a
//! sweep every [`SWEEP_EVERY`]), and past `max_entries` keys the least recently pushed
//! partitions are forgotten (their next push reads its window back from PostgreSQL).

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::domain::{PartitionName, QueueName, Tenant};

/// How often every window is swept of expired segments and long-idle partitions.
const SWEEP_EVERY: Duration = Duration::from_secs(10);
/// A partition untouched this long loses its (empty) window: one cold read on its next push.
const IDLE_FORGET: Duration = Duration::from_secs(600);

/// Identifies one partition's window.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct WindowKey {
    tenant: Tenant,
    queue: QueueName,
    partition: PartitionName,
}

impl WindowKey {
    /// The window of `partition` of `queue`.
    pub fn new(tenant: &Tenant, queue: &QueueName, partition: &PartitionName) -> Self {
        Self {
            tenant: tenant.clone(),
            queue: queue.clone(),
            partition: partition.clone(),
        }
    }
}

/// A stored message whose transaction-id key matches: a duplicate once its frame agrees.
/// Only the offset is known: one append can store several requests' messages in one
/// segment while each request's run enters the window as its own, so the window's runs
/// are not the stored segments.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hit {
    /// The partition's id.
    pub partition_id: i64,
    /// The matching message's offset.
    pub offset: i64,
}

/// Segments learned from PostgreSQL: (base offset, age, keys in offset order).
pub type Learned = (i64, Duration, Vec<i64>);

/// Every partition window of this node.
pub struct DedupWindows {
    state: Mutex<State>,
    max_entries: usize,
}

struct State {
    windows: HashMap<WindowKey, Window>,
    entries: usize,
    swept_at: Instant,
}

struct Window {
    partition_id: i64,
    covered_to: i64,
    length: Duration,
    segments: VecDeque<Seg>,
    index: HashIndex,
    used: Instant,
}

/// A window's key → offset index. The keys are cut from SHA-256 digests, so SipHash's
/// rounds bought nothing but time; foldhash (seeded per process) keeps a crafted id from
/// choosing its bucket all the same.
type HashIndex = HashMap<i64, i64, foldhash::fast::RandomState>;

struct Seg {
    base: i64,
    txn_keys: Box<[i64]>,
    stored_at: Instant,
}

impl DedupWindows {
    /// No windows yet; at most `max_entries` keys are held at once.
    pub fn new(max_entries: usize) -> Self {
        Self {
            state: Mutex::new(State {
                windows: HashMap::new(),
                entries: 0,
                swept_at: Instant::now(),
            }),
            max_entries: max_entries.max(1),
        }
    }

    /// The last offset the window of `key` covers (None: no window; the push learns it).
    pub fn known(&self, key: &WindowKey) -> Option<i64> {
        let state = self.lock();
        state.windows.get(key).map(|w| w.covered_to)
    }

    /// Keys stored in the window of `key` within its length, per asked key.
    pub fn find(&self, key: &WindowKey, txn_keys: &[i64]) -> Vec<Option<Hit>> {
        let now = Instant::now();
        let mut state = self.lock();
        state.sweep_if_due(now);
        let State {
            windows, entries, ..
        } = &mut *state;
        let Some(window) = windows.get_mut(key) else {
            return vec![None; txn_keys.len()];
        };
        window.used = now;
        *entries -= window.expire(now);
        txn_keys
            .iter()
            .map(|h| {
                window.index.get(h).map(|&offset| Hit {
                    partition_id: window.partition_id,
                    offset,
                })
            })
            .collect()
    }

    /// Adds what a stale `log_push_v3` answer listed: the segments of `partition_id` above
    /// `asked_with` (the `known` the call sent) inside a `window_secs` window, the partition
    /// now ending at `last_offset`. Answers the `known` to send next: `Some(last_offset)`
    /// when the window now covers everything, None when it must be read whole.
    pub fn learn(
        &self,
        key: &WindowKey,
        asked_with: Option<i64>,
        partition_id: i64,
        last_offset: i64,
        window_secs: i32,
        learned: Vec<Learned>,
    ) -> Option<i64> {
        let now = Instant::now();
        let mut state = self.lock();
        let length = window_length(window_secs)?;
        let current = state
            .windows
            .get(key)
            .map(|w| (w.partition_id, w.covered_to));
        let usable = match current {
            // Nothing held: only an answer that lists the whole window will do.
            None => asked_with.is_none(),
            // Held for this partition, and the answer starts at or below what is held.
            Some((pid, covered)) => {
                pid == partition_id && asked_with.unwrap_or(-1) <= covered && covered <= last_offset
            }
        };
        if !usable {
            state.forget(key);
            return None;
        }
        let window = state
            .windows
            .entry(key.clone())
            .or_insert_with(|| Window::empty(partition_id, length, now));
        window.length = length;
        window.used = now;
        let mut added = 0;
        // Oldest first, and only what the window does not hold yet.
        let mut learned = learned;
        learned.sort_by_key(|(base, _, _)| *base);
        for (base, age, txn_keys) in learned {
            if base <= window.covered_to {
                continue;
            }
            added += window.push(base, txn_keys, now.checked_sub(age).unwrap_or(now));
        }
        window.covered_to = last_offset;
        state.entries += added;
        state.bound(key, self.max_entries);
        Some(last_offset)
    }

    /// After the commit of a push that stored `txn_keys` (offset order) right after
    /// `previous_last` in `partition_id`: extends the window when it ended exactly there
    /// (or starts one for a partition that was empty). `window_secs` 0 drops the window.
    pub fn stored(
        &self,
        key: &WindowKey,
        partition_id: i64,
        previous_last: i64,
        window_secs: i32,
        txn_keys: Vec<i64>,
    ) {
        let now = Instant::now();
        let mut state = self.lock();
        let Some(length) = window_length(window_secs) else {
            state.forget(key);
            return;
        };
        let extends = match state.windows.get(key) {
            Some(w) => w.partition_id == partition_id && w.covered_to == previous_last,
            None => previous_last == -1,
        };
        if !extends {
            return;
        }
        let count = txn_keys.len() as i64;
        let window = state
            .windows
            .entry(key.clone())
            .or_insert_with(|| Window::empty(partition_id, length, now));
        window.length = length;
        window.used = now;
        let added = window.push(previous_last + 1, txn_keys, now);
        window.covered_to = previous_last + count;
        state.entries += added;
        state.bound(key, self.max_entries);
    }

    /// Keys held now, across every window.
    pub fn entries(&self) -> usize {
        self.lock().entries
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        // A panic while holding the lock leaves only a cache behind: keep using it.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

fn window_length(window_secs: i32) -> Option<Duration> {
    (window_secs > 0).then(|| Duration::from_secs(window_secs as u64))
}

impl State {
    fn forget(&mut self, key: &WindowKey) {
        if let Some(w) = self.windows.remove(key) {
            self.entries -= w.index.len();
        }
    }

    /// Forgets the least recently pushed windows (never `keep`) until under 90 % of `max`.
    fn bound(&mut self, keep: &WindowKey, max: usize) {
        if self.entries <= max {
            return;
        }
        let mut by_use: Vec<(Instant, WindowKey)> = self
            .windows
            .iter()
            .filter(|(k, _)| *k != keep)
            .map(|(k, w)| (w.used, k.clone()))
            .collect();
        by_use.sort_by_key(|(used, _)| *used);
        for (_, key) in by_use {
            if self.entries <= max / 10 * 9 {
                break;
            }
            self.forget(&key);
        }
    }

    fn sweep_if_due(&mut self, now: Instant) {
        if now.duration_since(self.swept_at) < SWEEP_EVERY {
            return;
        }
        self.swept_at = now;
        let mut removed = 0;
        self.windows.retain(|_, w| {
            removed += w.expire(now);
            !(w.segments.is_empty() && now.duration_since(w.used) > IDLE_FORGET)
        });
        self.entries -= removed;
    }
}

impl Window {
    /// A window of `partition_id` that covers nothing yet.
    fn empty(partition_id: i64, length: Duration, now: Instant) -> Self {
        Window {
            partition_id,
            covered_to: -1,
            length,
            segments: VecDeque::new(),
            index: HashIndex::default(),
            used: now,
        }
    }

    /// Adds one segment's keys; answers how many index entries were added.
    fn push(&mut self, base: i64, txn_keys: Vec<i64>, stored_at: Instant) -> usize {
        let before = self.index.len();
        for (k, h) in txn_keys.iter().enumerate() {
            self.index.insert(*h, base + k as i64);
        }
        self.segments.push_back(Seg {
            base,
            txn_keys: txn_keys.into_boxed_slice(),
            stored_at,
        });
        self.index.len() - before
    }

    /// Drops segments older than the window; answers how many index entries went.
    fn expire(&mut self, now: Instant) -> usize {
        let mut removed = 0;
        while let Some(seg) = self.segments.front() {
            if now.duration_since(seg.stored_at) <= self.length {
                break;
            }
            let end = seg.base + seg.txn_keys.len() as i64;
            for h in seg.txn_keys.iter() {
                // Only if the index still points into this segment (a later repeat wins).
                if self
                    .index
                    .get(h)
                    .is_some_and(|&off| off >= seg.base && off < end)
                {
                    self.index.remove(h);
                    removed += 1;
                }
            }
            self.segments.pop_front();
        }
        removed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(p: &str) -> WindowKey {
        WindowKey::new(
            &Tenant::default(),
            &QueueName::parse("q").unwrap(),
            &PartitionName::parse(p).unwrap(),
        )
    }

    #[test]
    fn a_fresh_partition_starts_a_window_that_finds_its_ids() {
        let w = DedupWindows::new(1000);
        let k = key("a");
        assert_eq!(w.known(&k), None);
        w.stored(&k, 7, -1, 60, vec![10, 11, 12]);
        assert_eq!(w.known(&k), Some(2));
        let hits = w.find(&k, &[11, 99]);
        assert_eq!(
            hits[0],
            Some(Hit {
                partition_id: 7,
                offset: 1,
            })
        );
        assert_eq!(hits[1], None);
    }

    #[test]
    fn a_store_that_does_not_follow_the_window_is_ignored() {
        let w = DedupWindows::new(1000);
        let k = key("a");
        w.stored(&k, 7, -1, 60, vec![1, 2]);
        // Someone else stored offsets 2..=3 meanwhile: this node's store after 3 is a gap.
        w.stored(&k, 7, 3, 60, vec![5]);
        assert_eq!(w.known(&k), Some(1));
        assert_eq!(w.find(&k, &[5]), vec![None]);
    }

    #[test]
    fn learning_covers_what_others_stored_and_a_mismatch_forgets_the_window() {
        let w = DedupWindows::new(1000);
        let k = key("a");
        assert_eq!(
            w.learn(
                &k,
                None,
                7,
                5,
                60,
                vec![
                    (3, Duration::ZERO, vec![30, 31, 32]),
                    (0, Duration::ZERO, vec![1, 2, 3])
                ]
            ),
            Some(5)
        );
        assert_eq!(w.find(&k, &[32])[0].map(|h| h.offset), Some(5));
        // An answer for another partition id (the queue was recreated) forgets it all.
        assert_eq!(w.learn(&k, Some(5), 8, 9, 60, vec![]), None);
        assert_eq!(w.known(&k), None);
    }

    #[test]
    fn segments_older_than_the_window_are_not_found() {
        let w = DedupWindows::new(1000);
        let k = key("a");
        w.learn(
            &k,
            None,
            7,
            1,
            60,
            vec![(0, Duration::from_secs(120), vec![1, 2])],
        );
        assert_eq!(w.find(&k, &[1, 2]), vec![None, None]);
        assert_eq!(w.entries(), 0);
    }

    #[test]
    fn past_the_bound_the_least_recently_pushed_partition_is_forgotten() {
        let w = DedupWindows::new(4);
        w.stored(&key("old"), 1, -1, 60, vec![1, 2, 3]);
        w.stored(&key("new"), 2, -1, 60, vec![4, 5, 6]);
        assert_eq!(w.known(&key("old")), None);
        assert_eq!(w.known(&key("new")), Some(2));
        assert_eq!(w.entries(), 3);
    }

    #[test]
    fn a_window_of_zero_seconds_holds_nothing() {
        let w = DedupWindows::new(100);
        let k = key("a");
        w.stored(&k, 1, -1, 0, vec![1]);
        assert_eq!(w.known(&k), None);
    }
}
