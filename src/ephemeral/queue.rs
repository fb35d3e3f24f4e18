//! One ephemeral queue of one tenant: its declaration, its rings (one per partition), what
//! it lost and refused, and the [`Notify`] a push rings so parked pops wake at once (no
//! polling). One mutex guards the queue; every operation on it is short and never awaits
//! while holding it.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use serde_json::{json, Value};
use tokio::sync::Notify;

use super::budget::Budget;
use super::ring::{AckOutcome, Delivered, Losses, Refusal, Ring};
use crate::domain::ephemeral::{AckStatus, EphemeralOptions, MessageId};

/// A queue's state under its lock.
#[derive(Debug)]
pub struct QueueState {
    /// The declaration (or the defaults, for a queue never configured).
    pub options: EphemeralOptions,
    /// Whether a declaration is stored in PostgreSQL.
    pub declared: bool,
    rings: BTreeMap<Arc<str>, Ring>,
    losses: Losses,
    refused: u64,
    pushed: u64,
    /// Where the next partition-less pop starts, so partitions take turns.
    turn: usize,
}

/// A queue: its state and its wake-up.
#[derive(Debug)]
pub struct Queue {
    state: Mutex<QueueState>,
    /// Rung by every push, and by a failed ack that makes a message ready again.
    pub pushed: Notify,
}

/// What a pop took.
#[derive(Debug, Default)]
pub struct Taken {
    /// The messages, in order.
    pub messages: Vec<Delivered>,
    /// When the earliest lease of the group falls due (a waiting pop wakes then too).
    pub next_due: Option<Instant>,
}

impl Queue {
    /// An empty queue with these options.
    pub fn new(options: EphemeralOptions, declared: bool) -> Self {
        Queue {
            state: Mutex::new(QueueState {
                options,
                declared,
                rings: BTreeMap::new(),
                losses: Losses::default(),
                refused: 0,
                pushed: 0,
                turn: 0,
            }),
            pushed: Notify::new(),
        }
    }

    /// The state, locked.
    pub fn lock(&self) -> MutexGuard<'_, QueueState> {
        self.state
            .lock()
            .expect("an ephemeral queue's lock is never poisoned")
    }
}

/// The engine-wide parts a queue operation needs.
pub struct Ctx<'a> {
    /// The broker-wide byte cap.
    pub budget: &'a Budget,
    /// This engine's incarnation, for message ids.
    pub incarnation: u64,
    /// Where new rings take their ids from.
    pub ring_ids: &'a AtomicU64,
}

impl QueueState {
    fn ring(&mut self, partition: &str, ctx: &Ctx<'_>) -> &mut Ring {
        if !self.rings.contains_key(partition) {
            let id = ctx.ring_ids.fetch_add(1, Ordering::Relaxed);
            let name: Arc<str> = Arc::from(partition);
            self.rings.insert(name.clone(), Ring::new(id, name));
        }
        self.rings
            .get_mut(partition)
            .expect("the ring was just made")
    }

    /// Appends a push to one partition's ring, whole or not at all.
    pub fn push(
        &mut self,
        partition: &str,
        payloads: &[Arc<str>],
        ctx: &Ctx<'_>,
    ) -> Result<(), Refusal> {
        let now = Instant::now();
        let options = self.options.clone();
        let mut losses = Losses::default();
        let ring = self.ring(partition, ctx);
        ring.expire(options.ttl(), now, ctx.budget, &mut losses);
        let pushed = ring.push(payloads, &options, ctx.budget, now, &mut losses);
        self.add(losses);
        match pushed {
            Ok(()) => self.pushed += payloads.len() as u64,
            Err(_) => self.refused += 1,
        }
        pushed
    }

    /// Takes up to `batch` messages for `group` from one partition or from each in turn.
    pub fn pop(
        &mut self,
        partition: Option<&str>,
        group: &str,
        batch: usize,
        auto_ack: bool,
        ctx: &Ctx<'_>,
    ) -> Taken {
        let now = Instant::now();
        let options = self.options.clone();
        let mut losses = Losses::default();
        let mut taken = Taken::default();
        let names: Vec<Arc<str>> = match partition {
            Some(p) => {
                self.ring(p, ctx);
                vec![Arc::from(p)]
            }
            None => {
                let mut names: Vec<Arc<str>> = self.rings.keys().cloned().collect();
                if !names.is_empty() {
                    self.turn = (self.turn + 1) % names.len();
                    names.rotate_left(self.turn);
                }
                names
            }
        };
        for name in names {
            let Some(ring) = self.rings.get_mut(&name) else {
                continue;
            };
            ring.expire(options.ttl(), now, ctx.budget, &mut losses);
            if taken.messages.len() < batch {
                ring.pop(
                    group,
                    batch,
                    auto_ack,
                    &options,
                    ctx.incarnation,
                    now,
                    &mut taken.messages,
                    &mut losses,
                );
                ring.trim(ctx.budget);
            }
            if let Some(due) = ring.next_due(group) {
                taken.next_due = Some(taken.next_due.map_or(due, |d: Instant| d.min(due)));
            }
        }
        self.add(losses);
        taken
    }

    /// Applies one ack of `group`.
    pub fn ack(&mut self, group: &str, id: &str, status: AckStatus, ctx: &Ctx<'_>) -> AckOutcome {
        let Some(id) = MessageId::parse(id) else {
            return AckOutcome::Unknown;
        };
        if id.incarnation != ctx.incarnation {
            return AckOutcome::Stale;
        }
        let options = self.options.clone();
        let mut losses = Losses::default();
        let Some(ring) = self.rings.values_mut().find(|r| r.id == id.ring) else {
            return AckOutcome::Stale;
        };
        let outcome = ring.ack(group, id.seq, status, &options, Instant::now(), &mut losses);
        ring.trim(ctx.budget);
        self.add(losses);
        outcome
    }

    /// Drops every message and cursor; answers how many messages were dropped.
    pub fn clear(&mut self, budget: &Budget) -> u64 {
        let dropped: u64 = self.rings.values_mut().map(|r| r.clear(budget)).sum();
        self.rings.clear();
        self.losses.dropped += dropped;
        dropped
    }

    fn add(&mut self, losses: Losses) {
        self.losses.dropped += losses.dropped;
        self.losses.expired += losses.expired;
        self.losses.retries_exhausted += losses.retries_exhausted;
    }

    /// What was lost so far and how many pushes were refused.
    pub fn losses(&self) -> (Losses, u64) {
        (self.losses, self.refused)
    }

    /// Messages and bytes held, over every partition.
    pub fn held(&self) -> (u64, u64) {
        self.rings
            .values()
            .fold((0, 0), |(n, b), r| (n + r.len() as u64, b + r.bytes()))
    }

    /// The depth answer: ring lengths, bytes, and the per-group cursors.
    pub fn depth_json(&self, queue: &str) -> Value {
        let (pending, bytes) = self.held();
        let mut groups: BTreeMap<&str, (u64, u64)> = BTreeMap::new();
        let partitions: Vec<Value> = self
            .rings
            .values()
            .map(|ring| {
                for (group, unseen, leased) in ring.groups() {
                    let sum = groups.entry(group).or_default();
                    sum.0 += unseen;
                    sum.1 += leased;
                }
                json!({"partition": &*ring.partition, "pending": ring.len(), "bytes": ring.bytes()})
            })
            .collect();
        json!({
            "queue": queue,
            "tier": "ephemeral",
            "pending": pending,
            "bytes": bytes,
            "partitionsPending": self.rings.values().filter(|r| !r.is_empty()).count(),
            "partitions": partitions,
            "groups": groups.into_iter().map(|(group, (pending, leased))| {
                json!({"group": group, "pending": pending, "leased": leased})
            }).collect::<Vec<_>>(),
            "pushed": self.pushed,
            "dropped": self.losses.dropped,
            "expired": self.losses.expired,
            "retriesExhausted": self.losses.retries_exhausted,
            "refused": self.refused,
            "options": self.options.to_json(),
            "declared": self.declared,
        })
    }
}
