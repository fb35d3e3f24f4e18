//! The writers of combined pushes (see [`super::combiner`] for how pushes are queued and
//! taken): each is a task of its own that stores what the combiner hands it in one
//! transaction, then answers and announces each request.

use std::collections::BTreeMap;
use std::sync::Arc;

use tracing::debug;

use super::announce::announce;
use super::combiner::{Job, Reply, SharedPush, Writer};
use super::error::PushError;
use super::prepared::{PreparedPush, Staged};
use super::stage::{create_missing, stage_many, store_committed};
use crate::broker::Broker;
use crate::db::transaction::DataTransaction;
use crate::db::DbError;
use crate::domain::{PushItem, PushOutcome, Tenant};
use crate::metrics::Metrics;

/// Hands a prepared push to the combiner, starts a writer on this thread if the push may
/// be written now (see [`super::combiner`]), and waits for the commit that holds the push.
/// `Err` hands the push back when combining is off, the broker is not started or is
/// stopping, or the queue is full: the caller stores it itself.
pub(super) async fn submit(
    broker: &Broker,
    tenant: &Tenant,
    items: Arc<Vec<PushItem>>,
    prepared: Arc<PreparedPush>,
) -> Result<Reply, SharedPush> {
    let combiner = &broker.push_combiner;
    let broker = match broker.handle() {
        Some(broker) if combiner.is_on() => broker,
        _ => return Err((items, prepared)),
    };
    let queued = combiner.enqueue(tenant, items, prepared)?;
    if let Some(job) = queued.first {
        let running = Running {
            books: Writer::of(&job),
            broker,
        };
        // On an HTTP worker (a single-threaded runtime) this runs on the same thread.
        tokio::spawn(write_loop(running, vec![job]));
    }
    match queued.answer.await {
        Ok(reply) => Ok(reply),
        // The writer died with the job (a panic, or the runtime is stopping).
        Err(_) => Ok(Err(PushError::Stopped)),
    }
}

/// A running writer: the broker it writes with and its share of the combiner's books.
/// One that ends any way but through [`PushCombiner::next_batch`] (a panic) gives its
/// slot and partitions back when dropped, so neither is lost.
///
/// [`PushCombiner::next_batch`]: super::combiner::PushCombiner::next_batch
struct Running {
    broker: Arc<Broker>,
    books: Writer,
}

impl Drop for Running {
    fn drop(&mut self) {
        self.broker.push_combiner.give_back(&self.books);
    }
}

/// Writes `first` (after the combining window, with what else it may take by then), then
/// what gathered meanwhile, until nothing it may take waits.
async fn write_loop(mut running: Running, first: Vec<Job>) {
    let broker = running.broker.clone();
    let combiner = &broker.push_combiner;
    let writer = &mut running.books;
    let mut batch = first;
    loop {
        let window = combiner.window();
        if !window.is_zero() {
            tokio::time::sleep(window).await;
            batch.extend(combiner.more(writer, batch.len(), messages(&batch)));
        }
        if !batch.is_empty() {
            write_batch(&broker, batch).await;
        }
        match combiner.next_batch(writer) {
            Some(next) => batch = next,
            None => return,
        }
    }
}

/// Messages in `batch`.
fn messages(batch: &[Job]) -> usize {
    batch.iter().map(|job| job.items.len()).sum()
}

/// Stores a batch in one transaction, or request by request if that fails for any reason
/// but an outage.
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
        Err(PushError::Db(error)) if error.is_outage() => {
            // The database is away: each request alone would wait for a connection as
            // long again (a pool timeout each, the last of many after minutes), and a
            // COMMIT lost with its connection may have stored the batch, so a retry could
            // store it twice. Every request gets the outage now (the intake spools it,
            // under the transaction ids it kept, which the replay answers duplicate if
            // that commit did land).
            debug!(error = %error, requests = batch.len(), "combined push met an outage; answering every request");
            let mut first = Some(error);
            for job in batch {
                let error = first.take().unwrap_or(DbError::Unavailable);
                answer(broker, job, Err(PushError::Db(error)));
            }
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
        for (tenant, ks) in &by_tenant {
            let partitions = ks.iter().flat_map(|&k| jobs[k].items.iter());
            let partitions = partitions.map(|item| (&item.queue, &item.partition));
            create_missing(&mut conn, broker, tenant, partitions).await?;
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
