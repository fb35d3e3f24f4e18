//! Combined pushes: push requests that arrive while others are being written share one
//! transaction and one commit (group commit), and requests for the same partition share
//! one append (one partition lock, one `log_push_v2` call).
//!
//! A few writer tasks ([`CombineConfig::writers`]) take turns on one queue of requests.
//! A writer takes the first waiting request, waits at most the combining window for more,
//! takes everything then waiting (up to [`MAX_REQUESTS`] requests, [`MAX_MESSAGES`]
//! messages), stages them all in one transaction, commits, and only then answers each
//! request: durability is the same as a push of its own. While one writer commits, the
//! next requests gather for the next writer, so combining follows the load without a
//! timer. A combined transaction that fails is retried request by request, so one
//! request's failure is never another's.

use std::collections::BTreeMap;
use std::sync::{Arc, Weak};
use std::time::Duration;

use tokio::sync::{mpsc, oneshot, Mutex};
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
/// Requests waiting for a writer at most; more wait in their handlers (backpressure).
const QUEUE_DEPTH: usize = 1024;

/// How pushes are combined.
#[derive(Debug, Clone, Copy)]
pub struct CombineConfig {
    /// Writer tasks (0: every push commits on its own, as before combining existed).
    pub writers: usize,
    /// How long a writer waits for more requests after the first one (zero: it takes
    /// only what is already waiting).
    pub window: Duration,
}

/// The queue in front of the writers; absent when combining is off.
pub struct PushCombiner {
    sender: Option<mpsc::Sender<Job>>,
    receiver: std::sync::Mutex<Option<mpsc::Receiver<Job>>>,
    config: CombineConfig,
}

/// A push handed back to its caller when the writers cannot take it.
type SharedPush = (Arc<Vec<PushItem>>, Arc<PreparedPush>);

/// What a request gets back.
type Reply = Result<Vec<PushOutcome>, PushError>;

struct Job {
    tenant: Tenant,
    items: Arc<Vec<PushItem>>,
    prepared: Arc<PreparedPush>,
    reply: oneshot::Sender<Reply>,
}

impl PushCombiner {
    /// A combiner whose writers start with [`start`](Self::start).
    pub fn new(config: CombineConfig) -> Self {
        if config.writers == 0 {
            return Self {
                sender: None,
                receiver: std::sync::Mutex::new(None),
                config,
            };
        }
        let (sender, receiver) = mpsc::channel(QUEUE_DEPTH);
        Self {
            sender: Some(sender),
            receiver: std::sync::Mutex::new(Some(receiver)),
            config,
        }
    }

    /// Starts the writers. They hold the broker weakly and end when it is dropped (its
    /// sender goes with it and the queue closes).
    pub fn start(&self, broker: &Arc<Broker>) {
        let taken = self.receiver.lock().map(|mut r| r.take()).ok().flatten();
        let Some(receiver) = taken else {
            return;
        };
        let receiver = Arc::new(Mutex::new(receiver));
        for _ in 0..self.config.writers {
            tokio::spawn(write_loop(
                receiver.clone(),
                Arc::downgrade(broker),
                self.config.window,
            ));
        }
    }

    /// True when pushes go through the writers.
    pub fn is_on(&self) -> bool {
        self.sender.is_some()
    }

    /// Hands a prepared push to the writers and waits for its commit. `None` when
    /// combining is off or the writers are gone (the caller stores it itself).
    pub(super) async fn submit(
        &self,
        tenant: &Tenant,
        items: Arc<Vec<PushItem>>,
        prepared: Arc<PreparedPush>,
    ) -> Result<Reply, SharedPush> {
        let Some(sender) = &self.sender else {
            return Err((items, prepared));
        };
        let (reply, answer) = oneshot::channel();
        let job = Job {
            tenant: tenant.clone(),
            items,
            prepared,
            reply,
        };
        if let Err(mpsc::error::SendError(job)) = sender.send(job).await {
            return Err((job.items, job.prepared));
        }
        match answer.await {
            Ok(reply) => Ok(reply),
            // The writer died with the job (the broker is stopping).
            Err(_) => Ok(Err(PushError::Stopped)),
        }
    }
}

async fn write_loop(
    receiver: Arc<Mutex<mpsc::Receiver<Job>>>,
    broker: Weak<Broker>,
    window: Duration,
) {
    loop {
        let batch = {
            let mut receiver = receiver.lock().await;
            let Some(first) = receiver.recv().await else {
                return;
            };
            if !window.is_zero() {
                tokio::time::sleep(window).await;
            }
            let mut messages = first.items.len();
            let mut batch = vec![first];
            while batch.len() < MAX_REQUESTS && messages < MAX_MESSAGES {
                match receiver.try_recv() {
                    Ok(job) => {
                        messages += job.items.len();
                        batch.push(job);
                    }
                    Err(_) => break,
                }
            }
            batch
        };
        let Some(broker) = broker.upgrade() else {
            return;
        };
        write_batch(&broker, batch).await;
    }
}

/// Stores a batch in one transaction, or request by request if that fails.
async fn write_batch(broker: &Broker, batch: Vec<Job>) {
    Metrics::bump_by(&broker.metrics.push_requests, batch.len() as u64);
    match store(broker, &batch).await {
        Ok(outcomes) => {
            for (job, outcomes) in batch.into_iter().zip(outcomes) {
                announce(broker, &job.tenant, &job.items, &outcomes);
                let _ = job.reply.send(Ok(outcomes));
            }
        }
        Err(error) if batch.len() == 1 => {
            let job = batch.into_iter().next().expect("one job");
            let _ = job.reply.send(Err(error));
        }
        Err(error) => {
            debug!(error = %error, requests = batch.len(), "combined push failed; storing its requests one by one");
            for job in batch {
                let single = [job];
                match store(broker, &single).await {
                    Ok(mut outcomes) => {
                        let [job] = single;
                        let outcomes = outcomes.pop().expect("one request's outcomes");
                        announce(broker, &job.tenant, &job.items, &outcomes);
                        let _ = job.reply.send(Ok(outcomes));
                    }
                    Err(error) => {
                        let [job] = single;
                        let _ = job.reply.send(Err(error));
                    }
                }
            }
        }
    }
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
        if let [(tenant, ks)] = Vec::from_iter(&by_tenant)[..] {
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
