//! One (queue, partition) ring: the messages in push order with their cost, the groups'
//! cursors over them, and the bounds. Messages leave from the front only: when every
//! group that has a cursor is past them (acked or committed at delivery), when the bounds
//! make room for a push under `dropOldest`, when they outlive the TTL, or at reset.
//! Every byte a message costs is counted here and in the broker-wide [`Budget`].

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::budget::Budget;
use super::cursor::{Cursor, Lease};
use super::store::{PayloadStore, StoredPayload};
use crate::domain::ephemeral::{AckStatus, EphemeralOptions, MessageId, Policy};

/// What one message costs beside its payload's bytes: its slot in the ring, the payload's
/// allocation and reference counts, a lease slot. Counting it makes the byte bounds bound
/// the number of messages too, so tiny payloads cannot grow memory past the cap.
pub const MESSAGE_OVERHEAD: u64 = 128;

/// What one message takes of the broker-wide budget: its payload's block as the payload
/// store allocates it (size classes round up) plus [`MESSAGE_OVERHEAD`]. Queue bounds
/// count the payload's own length instead (what the client sent).
fn memory_cost(store: &PayloadStore, len: usize) -> u64 {
    store.block_bytes(len) + MESSAGE_OVERHEAD
}

/// A held message.
#[derive(Debug)]
struct Entry {
    seq: u64,
    payload: StoredPayload,
    born: Instant,
}

/// A message handed to a consumer.
#[derive(Debug, Clone)]
pub struct Delivered {
    /// Its id, for the ack.
    pub id: MessageId,
    /// Its partition.
    pub partition: Arc<str>,
    /// Its payload, as the JSON text pushed.
    pub payload: Arc<str>,
    /// Deliveries so far, this one included.
    pub attempts: u32,
}

/// Why a push was refused; nothing of it was stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// The push alone is larger than the queue's bounds: it can never fit.
    TooLarge,
    /// The ring is full and the queue's policy is `reject`.
    QueueFull,
    /// The broker-wide cap is reached.
    BrokerFull,
}

/// Messages that left a ring other than by an ack, by cause.
#[derive(Debug, Default, Clone, Copy)]
pub struct Losses {
    /// Dropped to make room under `dropOldest`, or by a reset.
    pub dropped: u64,
    /// Older than the TTL.
    pub expired: u64,
    /// Failed past the retry limit.
    pub retries_exhausted: u64,
}

/// An ack's verdict on one message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AckOutcome {
    /// The message left the group (a completed ack, or a failed one past the retry limit).
    Acked,
    /// A failed or retried ack: the message comes back with `attempts + 1`.
    Redelivered,
    /// The message is no longer held (another incarnation, dropped, expired, reset).
    Stale,
    /// The message is held but this group holds no lease on it (already acked, or never
    /// delivered to it).
    Unknown,
}

impl AckOutcome {
    /// The wire spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            AckOutcome::Acked => "acked",
            AckOutcome::Redelivered => "redelivered",
            AckOutcome::Stale => "stale",
            AckOutcome::Unknown => "unknown",
        }
    }
}

/// One partition's ring.
#[derive(Debug)]
pub struct Ring {
    /// Unique within the engine's incarnation; part of every message id.
    pub id: u64,
    /// The partition's name.
    pub partition: Arc<str>,
    entries: VecDeque<Entry>,
    next_seq: u64,
    bytes: u64,
    /// What the held messages take of the broker-wide budget (see [`memory_cost`]).
    charged: u64,
    groups: HashMap<String, Cursor>,
}

impl Ring {
    /// An empty ring.
    pub fn new(id: u64, partition: Arc<str>) -> Self {
        Ring {
            id,
            partition,
            entries: VecDeque::new(),
            next_seq: 0,
            bytes: 0,
            charged: 0,
            groups: HashMap::new(),
        }
    }

    /// Messages held.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// True when the ring holds nothing.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Bytes held (payloads plus [`MESSAGE_OVERHEAD`] each).
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    fn head(&self) -> u64 {
        self.entries.front().map_or(self.next_seq, |e| e.seq)
    }

    /// Appends `payloads` whole, or refuses and changes nothing (except that under
    /// `dropOldest` a push that meets the broker-wide cap drops this ring's oldest
    /// messages to fit, and is refused only when the ring is empty and it still does not).
    pub fn push(
        &mut self,
        payloads: &[Arc<str>],
        options: &EphemeralOptions,
        budget: &Budget,
        now: Instant,
        losses: &mut Losses,
    ) -> Result<(), Refusal> {
        let count = payloads.len() as u64;
        let cost: u64 = payloads
            .iter()
            .map(|p| p.len() as u64 + MESSAGE_OVERHEAD)
            .sum();
        let store = budget.store();
        let charge: u64 = payloads.iter().map(|p| memory_cost(store, p.len())).sum();
        if count > options.max_length || cost > options.max_bytes || charge > budget.cap() {
            return Err(Refusal::TooLarge);
        }
        let over = |len: u64, bytes: u64| {
            len + count > options.max_length || bytes + cost > options.max_bytes
        };
        if over(self.entries.len() as u64, self.bytes) {
            if options.policy == Policy::Reject {
                return Err(Refusal::QueueFull);
            }
            while over(self.entries.len() as u64, self.bytes) && !self.entries.is_empty() {
                self.drop_front(budget);
                losses.dropped += 1;
            }
        }
        // The cap counts the bytes; the payloads' arena may be full before it (rounding,
        // blocks freed elsewhere not yet returned): either way old messages make room
        // under `dropOldest`, and the push is refused under `reject`.
        let mut copies = Vec::with_capacity(payloads.len());
        let mut taken = false;
        loop {
            taken = taken || budget.take(charge);
            if taken {
                while let Some(payload) = payloads.get(copies.len()) {
                    match store.store(payload) {
                        Some(copy) => copies.push(copy),
                        None => break,
                    }
                }
                if copies.len() == payloads.len() {
                    break;
                }
            }
            if options.policy == Policy::Reject || self.entries.is_empty() {
                if taken {
                    budget.give(charge);
                }
                return Err(Refusal::BrokerFull);
            }
            self.drop_front(budget);
            losses.dropped += 1;
        }
        for payload in copies {
            self.entries.push_back(Entry {
                seq: self.next_seq,
                payload,
                born: now,
            });
            self.next_seq += 1;
        }
        self.bytes += cost;
        self.charged += charge;
        Ok(())
    }

    fn drop_front(&mut self, budget: &Budget) {
        if let Some(entry) = self.entries.pop_front() {
            let len = entry.payload.len();
            let charge = memory_cost(budget.store(), len);
            self.bytes -= len as u64 + MESSAGE_OVERHEAD;
            self.charged -= charge;
            budget.give(charge);
        }
    }

    /// Drops the messages older than `ttl` (the front: the ring is in push order).
    pub fn expire(
        &mut self,
        ttl: Option<Duration>,
        now: Instant,
        budget: &Budget,
        losses: &mut Losses,
    ) {
        let Some(ttl) = ttl else { return };
        while self
            .entries
            .front()
            .is_some_and(|e| now.saturating_duration_since(e.born) >= ttl)
        {
            self.drop_front(budget);
            losses.expired += 1;
        }
    }

    /// Hands `group` up to `batch - out.len()` messages into `out`: first its leases that
    /// are due (redeliveries, `attempts + 1`; past the retry limit they are dropped and
    /// counted), then messages it has not seen. Leased unless `auto_ack`.
    #[allow(clippy::too_many_arguments)]
    pub fn pop(
        &mut self,
        group: &str,
        batch: usize,
        auto_ack: bool,
        options: &EphemeralOptions,
        incarnation: u64,
        now: Instant,
        out: &mut Vec<Delivered>,
        losses: &mut Losses,
    ) {
        let head = self.head();
        let cursor = self
            .groups
            .entry(group.to_owned())
            .or_insert_with(|| Cursor::at(head));
        cursor.catch_up(head);
        let due = now + options.lease();
        let room = batch.saturating_sub(out.len());
        for seq in cursor.due(now, room) {
            let Some(lease) = cursor.leases.get(&seq).copied() else {
                continue;
            };
            if lease.attempts > options.retry_limit {
                cursor.leases.remove(&seq);
                losses.retries_exhausted += 1;
                continue;
            }
            let attempts = lease.attempts + 1;
            if auto_ack {
                cursor.leases.remove(&seq);
            } else {
                cursor.leases.insert(seq, Lease { attempts, due });
            }
            let entry = &self.entries[(seq - head) as usize];
            out.push(delivered(
                incarnation,
                self.id,
                &self.partition,
                entry,
                attempts,
            ));
        }
        while out.len() < batch && cursor.next < self.next_seq {
            let seq = cursor.next;
            cursor.next += 1;
            if !auto_ack {
                cursor.leases.insert(seq, Lease { attempts: 1, due });
            }
            let entry = &self.entries[(seq - head) as usize];
            out.push(delivered(incarnation, self.id, &self.partition, entry, 1));
        }
    }

    /// Applies one ack of `group` to message `seq`.
    pub fn ack(
        &mut self,
        group: &str,
        seq: u64,
        status: AckStatus,
        options: &EphemeralOptions,
        now: Instant,
        losses: &mut Losses,
    ) -> AckOutcome {
        if seq < self.head() || seq >= self.next_seq {
            return AckOutcome::Stale;
        }
        let Some(cursor) = self.groups.get_mut(group) else {
            return AckOutcome::Unknown;
        };
        let Some(lease) = cursor.leases.get_mut(&seq) else {
            return AckOutcome::Unknown;
        };
        match status {
            AckStatus::Completed => {
                cursor.leases.remove(&seq);
                AckOutcome::Acked
            }
            AckStatus::Failed | AckStatus::Retry if lease.attempts > options.retry_limit => {
                cursor.leases.remove(&seq);
                losses.retries_exhausted += 1;
                AckOutcome::Acked
            }
            AckStatus::Failed | AckStatus::Retry => {
                lease.due = now;
                AckOutcome::Redelivered
            }
        }
    }

    /// Drops from the front what every group is past. A ring no group reads yet keeps its
    /// messages (until the bounds or the TTL drop them), so the first group sees them.
    pub fn trim(&mut self, budget: &Budget) {
        let Some(low) = self.groups.values().map(Cursor::low).min() else {
            return;
        };
        while self.entries.front().is_some_and(|e| e.seq < low) {
            self.drop_front(budget);
        }
        if self.entries.is_empty() && self.entries.capacity() > 1024 {
            self.entries.shrink_to(1024);
        }
    }

    /// Drops every message and forgets every group; returns how many messages it dropped.
    /// Sequence numbers go on rising, so an ack of a message from before answers `stale`.
    pub fn clear(&mut self, budget: &Budget) -> u64 {
        let dropped = self.entries.len() as u64;
        budget.give(self.charged);
        self.charged = 0;
        self.entries = VecDeque::new();
        self.bytes = 0;
        self.groups.clear();
        dropped
    }

    /// The earliest instant one of `group`'s leases falls due.
    pub fn next_due(&self, group: &str) -> Option<Instant> {
        self.groups.get(group).and_then(Cursor::next_due)
    }

    /// Per group: messages it has not been handed, and messages leased to it.
    pub fn groups(&self) -> impl Iterator<Item = (&str, u64, u64)> + '_ {
        let end = self.next_seq;
        let head = self.head();
        self.groups.iter().map(move |(name, cursor)| {
            (
                name.as_str(),
                end - cursor.next.max(head),
                cursor.leases.len() as u64,
            )
        })
    }
}

fn delivered(
    incarnation: u64,
    ring: u64,
    partition: &Arc<str>,
    entry: &Entry,
    attempts: u32,
) -> Delivered {
    Delivered {
        id: MessageId {
            incarnation,
            ring,
            seq: entry.seq,
        },
        partition: partition.clone(),
        payload: Arc::from(entry.payload.as_str()),
        attempts,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn push_one(ring: &mut Ring, budget: &Budget, text: &str, options: &EphemeralOptions) {
        let payloads: Vec<Arc<str>> = vec![Arc::from(text)];
        let mut losses = Losses::default();
        ring.push(&payloads, options, budget, Instant::now(), &mut losses)
            .expect("room");
    }

    #[test]
    fn the_budget_is_charged_the_payloads_block_and_the_queue_its_length() {
        let budget = Budget::new(1 << 20);
        let options = EphemeralOptions::default();
        let mut ring = Ring::new(1, Arc::from("p"));
        let text = "x".repeat(1030);
        push_one(&mut ring, &budget, &text, &options);
        let block = budget.store().block_bytes(text.len());
        assert!(block > 1030, "size classes round up: {block}");
        assert_eq!(budget.held(), block + MESSAGE_OVERHEAD);
        assert_eq!(ring.bytes(), 1030 + MESSAGE_OVERHEAD);
        ring.clear(&budget);
        assert_eq!(budget.held(), 0, "everything charged is given back");
    }

    #[test]
    fn a_drop_oldest_ring_keeps_taking_pushes_past_the_cap() {
        // A cap of 64 MiB: the payload arena is 64 MiB and the byte budget the same, so
        // 64 KiB payloads (their blocks rounded up, plus the per-message overhead) meet one
        // of the two; either way the ring drops its oldest and takes the push.
        let budget = Budget::new(64 << 20);
        let options = EphemeralOptions {
            max_bytes: u64::MAX,
            max_length: u64::MAX,
            policy: Policy::DropOldest,
            ..EphemeralOptions::default()
        };
        let mut ring = Ring::new(1, Arc::from("p"));
        let text = "y".repeat(64 << 10);
        let mut losses = Losses::default();
        for _ in 0..2_000 {
            let payloads: Vec<Arc<str>> = vec![Arc::from(text.as_str())];
            ring.push(&payloads, &options, &budget, Instant::now(), &mut losses)
                .expect("dropOldest always makes room");
        }
        assert!(losses.dropped > 0, "2,000 × 64 KiB past a 64 MiB cap drops");
        assert!(budget.held() <= budget.cap());
        assert_eq!(ring.len() as u64 + losses.dropped, 2_000);
    }
}
