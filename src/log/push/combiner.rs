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
//! another's.
//!
//! A writer is a task of its own, not its first request's handler: a client that leaves
//! mid-push drops only its own handler, never a batch that holds others' pushes.

use std::collections::{BTreeMap, HashSet};
use std::hash::BuildHasher;
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::Duration;

use tokio::sync::oneshot;
use tracing::debug;

use super::{
    announce, stage_many, store_committed, PreparedPush, PushError, PushItem, PushOutcome, Staged,
};
use crate::broker::Broker;
use crate::db::transaction::DataTransaction;
use crate::domain::Tenant;
use crate::metrics::Metrics;

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

/// The queue of pushes waiting for a writer, and the writers running.
pub struct PushCombiner {
    queue: Mutex<Queue>,
    /// The broker the writers write with, set by [`start`](Self::start); weak, since the
    /// broker holds the combiner.
    broker: OnceLock<Weak<Broker>>,
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
type SharedPush = (Arc<Vec<PushItem>>, Arc<PreparedPush>);

/// What a request gets back.
type Reply = Result<Vec<PushOutcome>, PushError>;

struct Job {
    tenant: Tenant,
    items: Arc<Vec<PushItem>>,
    prepared: Arc<PreparedPush>,
    partitions: Partitions,
    reply: oneshot::Sender<Reply>,
}

impl PushCombiner {
    /// A combiner that takes pushes once [`start`](Self::start) gave it its broker.
    pub fn new(config: CombineConfig) -> Self {
        Self {
            queue: Mutex::new(Queue::default()),
            broker: OnceLock::new(),
            hasher: Default::default(),
            config,
        }
    }

    /// Gives the combiner the broker its writers write with.
    pub fn start(&self, broker: &Arc<Broker>) {
        let _ = self.broker.set(Arc::downgrade(broker));
    }

    /// True when pushes go through the writers.
    pub fn is_on(&self) -> bool {
        self.config.writers > 0
    }

    /// Queues a prepared push, starts a writer on this thread if the push may be written
    /// now (see the module's doc), and waits for the commit that holds the push. `Err`
    /// hands the push back when combining is off, the combiner has no broker (not started,
    /// or stopping) or the queue is full: the caller stores it itself.
    pub(super) async fn submit(
        &self,
        tenant: &Tenant,
        items: Arc<Vec<PushItem>>,
        prepared: Arc<PreparedPush>,
    ) -> Result<Reply, SharedPush> {
        let broker = match self.broker.get().and_then(Weak::upgrade) {
            Some(broker) if self.is_on() => broker,
            _ => return Err((items, prepared)),
        };
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
        if let Some(job) = first {
            let writer = Writer {
                broker,
                slot: true,
                held: job.partitions.clone(),
            };
            // On an HTTP worker (a single-threaded runtime) this runs on the same thread.
            tokio::spawn(write_loop(writer, vec![job]));
        }
        match answer.await {
            Ok(reply) => Ok(reply),
            // The writer died with the job (a panic, or the runtime is stopping).
            Err(_) => Ok(Err(PushError::Stopped)),
        }
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
    fn next_batch(&self, writer: &mut Writer) -> Option<Vec<Job>> {
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
    fn more(&self, writer: &mut Writer, requests: usize, messages: usize) -> Vec<Job> {
        take(&mut self.lock(), writer, requests, messages)
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

/// A running writer: holds its slot in [`Queue::writers`] until
/// [`PushCombiner::next_batch`] gives it back, and the partitions of the batch it writes.
/// One that ends any other way (a panic) gives both back when dropped, so neither is lost.
struct Writer {
    broker: Arc<Broker>,
    slot: bool,
    held: Vec<u64>,
}

impl Drop for Writer {
    fn drop(&mut self) {
        if self.slot {
            let mut queue = self.broker.push_combiner.lock();
            queue.writers -= 1;
            for partition in &self.held {
                queue.held.remove(partition);
            }
        }
    }
}

/// Writes `first` (after the combining window, with what else it may take by then), then
/// what gathered meanwhile, until nothing it may take waits.
async fn write_loop(mut writer: Writer, first: Vec<Job>) {
    let broker = writer.broker.clone();
    let combiner = &broker.push_combiner;
    let mut batch = first;
    loop {
        if !combiner.config.window.is_zero() {
            tokio::time::sleep(combiner.config.window).await;
            batch.extend(combiner.more(&mut writer, batch.len(), messages(&batch)));
        }
        if !batch.is_empty() {
            write_batch(&broker, batch).await;
        }
        match combiner.next_batch(&mut writer) {
            Some(next) => batch = next,
            None => return,
        }
    }
}

/// Messages in `batch`.
fn messages(batch: &[Job]) -> usize {
    batch.iter().map(|job| job.items.len()).sum()
}

/// Stores a batch in one transaction, or request by request if that fails.
async fn write_batch(broker: &Broker, batch: Vec<Job>) {
    Metrics::bump_by(&broker.metrics.push_requests, batch.len() as u64);
    match store(broker, &batch).await {
        Ok(outcomes) => {
            for (job, outcomes) in batch.into_iter().zip(outcomes) {
                answer(broker, job, Ok(outcomes));
            }
        }
        Err(error) if batch.len() == 1 => {
            let job = batch.into_iter().next().expect("one job");
            answer(broker, job, Err(error));
        }
        Err(error) => {
            debug!(error = %error, requests = batch.len(), "combined push failed; storing its requests one by one");
            for job in batch {
                let reply = store(broker, std::slice::from_ref(&job))
                    .await
                    .map(|mut outcomes| outcomes.pop().expect("one request's outcomes"));
                answer(broker, job, reply);
            }
        }
    }
}

/// Answers `job`'s request; a stored push is announced first (dedup window, wakes).
fn answer(broker: &Broker, job: Job, reply: Reply) {
    if let Ok(outcomes) = &reply {
        announce(broker, &job.tenant, &job.items, outcomes);
    }
    let _ = job.reply.send(reply);
}

/// One transaction for `jobs`, tenants in a fixed order (so two writers lock partitions in
/// the same order); outcomes per job.
async fn store(broker: &Broker, jobs: &[Job]) -> Result<Vec<Vec<PushOutcome>>, PushError> {
    let mut by_tenant: BTreeMap<&Tenant, Vec<usize>> = BTreeMap::new();
    for (k, job) in jobs.iter().enumerate() {
        by_tenant.entry(&job.tenant).or_default().push(k);
    }
    let zstd_level = broker.config.push.zstd_level;
    let mut conn = broker.db.conn().await?;
    let result = async {
        if let (1, Some((tenant, ks))) = (by_tenant.len(), by_tenant.first_key_value()) {
            let staged = staged_of(jobs, ks);
            let stored = store_committed(&mut conn, broker, tenant, &staged, zstd_level).await?;
            return Ok(stored.into_iter().map(Some).collect());
        }
        let tx = DataTransaction::begin(&mut conn).await?;
        let mut outcomes: Vec<Option<Vec<PushOutcome>>> = vec![None; jobs.len()];
        for (tenant, ks) in &by_tenant {
            let staged = staged_of(jobs, ks);
            let per = stage_many(&tx, broker, tenant, &staged, zstd_level).await?;
            for (&k, o) in ks.iter().zip(per) {
                outcomes[k] = Some(o);
            }
        }
        tx.commit().await?;
        Ok::<_, PushError>(outcomes)
    }
    .await;
    match result {
        Ok(outcomes) => {
            Metrics::bump(&broker.metrics.push_commits);
            Ok(outcomes
                .into_iter()
                .map(|o| o.expect("every job belongs to one tenant"))
                .collect())
        }
        Err(PushError::Db(error)) => Err(PushError::Db(conn.note(error))),
        Err(other) => Err(other),
    }
}

/// The jobs `ks` as requests to stage together.
fn staged_of<'a>(jobs: &'a [Job], ks: &[usize]) -> Vec<Staged<'a>> {
    ks.iter()
        .map(|&k| Staged {
            items: &jobs[k].items,
            prepared: &jobs[k].prepared,
        })
        .collect()
}
