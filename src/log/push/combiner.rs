//! Combined pushes: pushes to a partition that is being written wait for that write and
//! then share one append (one partition lock, one `log_push_v3` call) and one commit, and
//! pushes that wait together across partitions share one transaction and one commit
//! (group commit).
//!
//! A push that touches no partition a running writer holds or a waiting push touches, and
//! finds fewer than [`CombineConfig::writers`] writers running, starts a writer of its own
//! on the thread that received it (its HTTP worker, whose own connections and core it then
//! uses); otherwise it joins the queue of waiting pushes. A writer waits at most the
//! combining window, then takes, in arrival order, every waiting push whose partitions no
//! other writer holds and no push left waiting before it touches (up to [`MAX_REQUESTS`]
//! requests, [`MAX_MESSAGES`] messages), holds their partitions, stages them all in one
//! transaction, commits, and only then answers each request: durability is the same as a
//! push of its own. It then lets its partitions go, goes on with what gathered meanwhile,
//! and ends when nothing it may take waits. So pushes to different partitions are written
//! side by side, each where it arrived and with no hop to another thread, while pushes
//! that would queue on one partition's lock, or on a writer, are combined: combining
//! follows contention, not a timer. Each partition's pushes are taken in arrival order,
//! so a push waiting for one busy partition is never overtaken on its others. A combined
//! transaction that fails is retried request by request, so one request's failure is never
//! another's; except for an outage, which every request of the batch is answered at once
//! (`writers::write_batch`).
//!
//! A writer is a task of its own, not its first request's handler: a client that leaves
//! mid-push drops only its own handler, never a batch that holds others' pushes.

use std::collections::HashSet;
use std::hash::BuildHasher;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::oneshot;

use super::error::PushError;
use super::prepared::PreparedPush;
use crate::domain::{PushItem, PushOutcome, Tenant};

/// Most requests one combined transaction takes (bounds its lock set and its latency).
pub const MAX_REQUESTS: usize = 64;
/// Most messages one combined transaction takes.
pub const MAX_MESSAGES: usize = 20_000;
/// Requests waiting for a writer at most; past it a push is written on its own (the
/// connection pool then bounds how many are written at once).
const QUEUE_DEPTH: usize = 1024;

/// How pushes are combined.
#[derive(Debug, Clone, Copy)]
pub struct CombineConfig {
    /// Writers running at once at most, each writing one transaction at a time (0: every
    /// push commits on its own, as before combining existed).
    pub writers: usize,
    /// How long a writer waits for more requests after the first one (zero: it takes
    /// only what is already waiting).
    pub window: Duration,
}

/// The queue of pushes waiting for a writer, and the writers running. It only keeps the
/// books: the writers themselves (`log::push::writers`) store what it hands them.
pub struct PushCombiner {
    queue: Mutex<Queue>,
    /// Hashes partitions into [`Partitions`] keys.
    hasher: std::collections::hash_map::RandomState,
    config: CombineConfig,
}

/// A push's partitions, as hashes of (tenant, queue, partition): two partitions with one
/// hash only make their pushes wait for each other, which is always safe.
type Partitions = Vec<u64>;

#[derive(Default)]
struct Queue {
    waiting: Vec<Job>,
    /// Writers running (each holds one slot until it finds nothing to take).
    writers: usize,
    /// The partitions of the batches being written.
    held: HashSet<u64>,
}

impl Queue {
    /// True when a writer holds one of `partitions` or a waiting push touches one (a new
    /// push to it then waits its turn behind them).
    fn is_claimed(&self, partitions: &[u64]) -> bool {
        partitions.iter().any(|p| {
            self.held.contains(p) || self.waiting.iter().any(|job| job.partitions.contains(p))
        })
    }
}

/// A push handed back to its caller when the writers cannot take it.
pub(super) type SharedPush = (Arc<Vec<PushItem>>, Arc<PreparedPush>);

/// What a request gets back.
pub(super) type Reply = Result<Vec<PushOutcome>, PushError>;

/// One queued push and where its answer goes.
pub(super) struct Job {
    pub(super) tenant: Tenant,
    pub(super) items: Arc<Vec<PushItem>>,
    pub(super) prepared: Arc<PreparedPush>,
    pub(super) partitions: Partitions,
    pub(super) reply: oneshot::Sender<Reply>,
}

/// What [`PushCombiner::enqueue`] made of a push.
pub(super) struct Queued {
    /// The push itself when it may be written now: the caller starts a writer with it
    /// (the writer's slot and the push's partitions are already taken).
    pub(super) first: Option<Job>,
    /// Where the push's answer arrives.
    pub(super) answer: oneshot::Receiver<Reply>,
}

impl PushCombiner {
    /// A combiner with no push waiting and no writer running.
    pub fn new(config: CombineConfig) -> Self {
        Self {
            queue: Mutex::new(Queue::default()),
            hasher: Default::default(),
            config,
        }
    }

    /// True when pushes go through the writers.
    pub fn is_on(&self) -> bool {
        self.config.writers > 0
    }

    /// Queues a prepared push (see the module's doc): [`Queued::first`] holds it when it
    /// may be written now, by a writer the caller starts. `Err` hands the push back when
    /// the queue is full: the caller stores it itself.
    pub(super) fn enqueue(
        &self,
        tenant: &Tenant,
        items: Arc<Vec<PushItem>>,
        prepared: Arc<PreparedPush>,
    ) -> Result<Queued, SharedPush> {
        let partitions = self.partitions(tenant, &items);
        let (reply, answer) = oneshot::channel();
        let job = Job {
            tenant: tenant.clone(),
            items,
            prepared,
            partitions,
            reply,
        };
        let first = {
            let mut queue = self.lock();
            if queue.writers < self.config.writers && !queue.is_claimed(&job.partitions) {
                queue.writers += 1;
                queue.held.extend(job.partitions.iter().copied());
                Some(job)
            } else if queue.waiting.len() < QUEUE_DEPTH {
                queue.waiting.push(job);
                None
            } else {
                return Err((job.items, job.prepared));
            }
        };
        Ok(Queued { first, answer })
    }

    /// How long a writer waits for more requests after its first one.
    pub(super) fn window(&self) -> Duration {
        self.config.window
    }

    /// The distinct partitions of `items` (consecutive items mostly share one).
    fn partitions(&self, tenant: &Tenant, items: &[PushItem]) -> Partitions {
        let mut partitions = Partitions::new();
        let mut previous: Option<&PushItem> = None;
        for item in items {
            if previous.is_some_and(|p| p.queue == item.queue && p.partition == item.partition) {
                continue;
            }
            previous = Some(item);
            let key = self.hasher.hash_one((tenant, &item.queue, &item.partition));
            if !partitions.contains(&key) {
                partitions.push(key);
            }
        }
        partitions
    }

    /// The queue; a panic elsewhere cannot leave it inconsistent (every change to it is
    /// made whole under the lock), so a poisoned lock is taken as it is.
    fn lock(&self) -> std::sync::MutexGuard<'_, Queue> {
        self.queue
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Lets go of the partitions `writer` wrote, then takes its next batch (see
    /// [`more`](Self::more)). `None`, with the writer's slot given back under the same
    /// lock pushes are queued under (so no push is left without a writer), when there is
    /// none.
    pub(super) fn next_batch(&self, writer: &mut Writer) -> Option<Vec<Job>> {
        let mut queue = self.lock();
        for partition in writer.held.drain(..) {
            queue.held.remove(&partition);
        }
        let batch = take(&mut queue, writer, 0, 0);
        if batch.is_empty() {
            queue.writers -= 1;
            writer.slot = false;
            return None;
        }
        Some(batch)
    }

    /// What `writer`, holding a batch of `requests` requests and `messages` messages, may
    /// add to it.
    pub(super) fn more(&self, writer: &mut Writer, requests: usize, messages: usize) -> Vec<Job> {
        take(&mut self.lock(), writer, requests, messages)
    }

    /// Gives back what a writer that ended without [`next_batch`](Self::next_batch) (a
    /// panic) still holds: its slot and its partitions.
    pub(super) fn give_back(&self, writer: &Writer) {
        if writer.slot {
            let mut queue = self.lock();
            queue.writers -= 1;
            for partition in &writer.held {
                queue.held.remove(partition);
            }
        }
    }
}

/// Every waiting push (in arrival order, within the limits) whose partitions no writer but
/// `writer` holds; `writer` holds their partitions from now on.
fn take(queue: &mut Queue, writer: &mut Writer, requests: usize, messages: usize) -> Vec<Job> {
    let mut messages = messages;
    let mut batch = Vec::new();
    // Partitions of pushes left waiting: a later push to one of them waits too, so each
    // partition's pushes are taken in arrival order and none is overtaken for ever.
    let mut passed_over: Vec<u64> = Vec::new();
    let mut k = 0;
    while k < queue.waiting.len()
        && requests + batch.len() < MAX_REQUESTS
        && messages < MAX_MESSAGES
    {
        let job = &queue.waiting[k];
        let mine = |p: &u64| writer.held.contains(p);
        let blocked = |p: &u64| (queue.held.contains(p) && !mine(p)) || passed_over.contains(p);
        if job.partitions.iter().any(blocked) {
            passed_over.extend(job.partitions.iter().copied());
            k += 1;
            continue;
        }
        let job = queue.waiting.remove(k);
        for &partition in &job.partitions {
            if !writer.held.contains(&partition) {
                writer.held.push(partition);
                queue.held.insert(partition);
            }
        }
        messages += job.items.len();
        batch.push(job);
    }
    batch
}

/// A writer's share of the books: its slot in [`Queue::writers`], held until
/// [`PushCombiner::next_batch`] gives it back, and the partitions of the batch it writes.
pub(super) struct Writer {
    slot: bool,
    held: Vec<u64>,
}

impl Writer {
    /// The books of a writer started with `first` (as [`PushCombiner::enqueue`] handed it
    /// over: slot and partitions taken).
    pub(super) fn of(first: &Job) -> Self {
        Self {
            slot: true,
            held: first.partitions.clone(),
        }
    }
}
