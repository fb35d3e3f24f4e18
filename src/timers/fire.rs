//! The fire loop: on every node, claims due timers and pushes each as exactly one message.
//!
//! One fire is one PostgreSQL transaction: `queen.timers_claim_v1` deletes up to
//! [`BATCH`] due rows (earliest first, `FOR UPDATE SKIP LOCKED`, so nodes share the work
//! and never take the same row), their messages are appended through the push path's own
//! staging (`log::push::stage`: the queue and partition are created when missing, the
//! message id is the promised one, `transactionId` the timer's txn), and the commit makes
//! both durable at once. After the commit the push is announced as any push is, so parked
//! pops wake. A node killed mid-fire never commits: its rows come back and another node
//! fires them. A transaction id the partition's dedup window already holds stores nothing
//! (`duplicate`), and the timer is still gone: its txn is in the queue already.
//!
//! A fire that cannot push (push maintenance, spooled pushes ahead in a partition, a full
//! queue, an encrypted queue whose key this node lacks, a database error) rolls back, and
//! `queen.timers_backoff_v1` makes its timers due again after 100 ms * 2^attempts (at most
//! 30 s). A timer is never dropped: it stays pending, visible and cancellable until a push
//! succeeds.
//!
//! When to look: at once again after a full batch; else at the earliest due time, which
//! `queen.timers_next_due_v1` gives from PostgreSQL's clock, at most `QUEEN_TIMERS_LOOK_MS`
//! (150 ms) ahead (how soon this node notices a timer scheduled on another node), and
//! sooner when a schedule on this node says its timer is due earlier
//! ([`TimerWake`](super::wake::TimerWake)). A claim runs only when a look or a local
//! schedule says a timer is due, so an idle node costs one index lookup per look.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tracing::{debug, warn};

use crate::broker::Broker;
use crate::db::timers::{self, ClaimedTimer};
use crate::db::transaction::DataTransaction;
use crate::db::DbError;
use crate::domain::{PartitionName, PushItem, PushOutcome, QueueName, Tenant};
use crate::log::push::announce::announce;
use crate::log::push::error::PushError;
use crate::log::push::prepare_with_ids;
use crate::log::push::stage::stage;
use crate::log::spool::order::{self, Held};

/// Timers claimed by one fire at most.
pub const BATCH: i32 = 500;
/// How often the pending gauge is counted.
const PENDING_EVERY: Duration = Duration::from_secs(5);
/// The pause after a look that failed (the database away).
const ERROR_PAUSE: Duration = Duration::from_millis(500);
/// The pause when timers are due but none could be claimed (another node holds them).
const HELD_PAUSE: Duration = Duration::from_millis(5);

/// Starts this node's fire loop; it ends when the broker drains.
pub fn spawn(broker: Arc<Broker>) -> tokio::task::JoinHandle<()> {
    let gauge = broker.clone();
    tokio::spawn(async move { count_pending(&gauge).await });
    tokio::spawn(async move { run(&broker).await })
}

/// Counts the pending timers for the gauge every [`PENDING_EVERY`], beside the fire loop:
/// the count reads every pending row (hundreds of ms at a million), which must not hold up
/// a fire.
async fn count_pending(broker: &Broker) {
    loop {
        if let Ok(mut conn) = broker.db.conn().await {
            if let Ok(n) = timers::pending(&mut conn).await {
                broker.metrics.timers.set_pending(n);
            }
        }
        tokio::select! {
            _ = tokio::time::sleep(PENDING_EVERY) => {}
            _ = broker.draining.cancelled() => return,
        }
    }
}

async fn run(broker: &Broker) {
    let look = broker.config.push.timers_look;
    // Whether a timer may be due now: the first pass looks, then a look or a local
    // schedule says so.
    let mut due = true;
    loop {
        if broker.is_draining() {
            return;
        }
        if due {
            match fire_once(broker).await {
                Ok(n) if n >= BATCH as usize => continue,
                Ok(_) => {}
                Err(error) => {
                    broker.metrics.timers.failed_fire();
                    warn!(error = %error, "timer fire failed; its timers back off");
                    pause(broker, ERROR_PAUSE).await;
                    continue;
                }
            }
        }
        let wait = match next_due(broker).await {
            Ok(Some(ms)) if ms <= 0.0 => {
                due = true;
                HELD_PAUSE
            }
            // A millisecond past the due time: the claim compares with PostgreSQL's clock.
            Ok(Some(ms)) => {
                let until_due = Duration::from_micros((ms * 1000.0) as u64 + 1000);
                due = until_due <= look;
                until_due.min(look)
            }
            Ok(None) => {
                due = false;
                look
            }
            Err(error) => {
                debug!(error = %error, "timers' next due time unread");
                due = true;
                ERROR_PAUSE
            }
        };
        broker.timers.sleep_until(Instant::now() + wait);
        loop {
            let deadline = broker.timers.deadline();
            tokio::select! {
                _ = tokio::time::sleep_until(deadline.into()) => break,
                // A schedule on this node moved the deadline to its own due time.
                _ = broker.timers.heard() => due = true,
                _ = broker.draining.cancelled() => return,
            }
        }
    }
}

async fn pause(broker: &Broker, pause: Duration) {
    tokio::select! {
        _ = tokio::time::sleep(pause) => {}
        _ = broker.draining.cancelled() => {}
    }
}

async fn next_due(broker: &Broker) -> Result<Option<f64>, DbError> {
    let mut conn = broker.db.conn().await?;
    timers::next_due_ms(&mut conn).await
}

/// Why a fire rolled back.
#[derive(Debug, thiserror::Error)]
enum FireError {
    #[error(transparent)]
    Db(#[from] DbError),
    #[error(transparent)]
    Push(#[from] PushError),
    #[error(transparent)]
    Held(#[from] Held),
    #[error("{0}")]
    Refused(String),
}

/// The messages of one tenant's claimed timers.
struct TenantFire {
    tenant: Tenant,
    items: Vec<PushItem>,
    outcomes: Vec<PushOutcome>,
}

/// One fire: claims, pushes and commits; answers how many timers fired. On failure the
/// claimed timers back off (see the module comment).
async fn fire_once(broker: &Broker) -> Result<usize, DbError> {
    let mut conn = broker.db.conn().await?;
    let tx = DataTransaction::begin(&mut conn).await?;
    let claimed = tx.claim_timers(BATCH).await?;
    if claimed.is_empty() {
        tx.rollback().await?;
        return Ok(0);
    }
    let claimed_at = Instant::now();
    match push_claimed(broker, &tx, &claimed).await {
        Ok(fires) => {
            tx.commit().await?;
            for fire in &fires {
                announce(broker, &fire.tenant, &fire.items, &fire.outcomes);
            }
            let extra = claimed_at.elapsed().as_secs_f64() * 1000.0;
            for timer in &claimed {
                broker.metrics.timers.fired(timer.late_ms + extra);
            }
            Ok(claimed.len())
        }
        Err(error) => {
            if let Err(rollback) = tx.rollback().await {
                warn!(error = %rollback, "timer fire rollback failed");
            }
            broker.metrics.timers.failed_fire();
            warn!(error = %error, timers = claimed.len(), "timer fire could not push; backing off");
            let conn = &mut conn;
            timers::backoff(conn, &claimed).await?;
            Ok(0)
        }
    }
}

/// Appends the claimed timers' messages inside `tx`, one staged push per tenant.
async fn push_claimed(
    broker: &Broker,
    tx: &DataTransaction<'_>,
    claimed: &[ClaimedTimer],
) -> Result<Vec<TenantFire>, FireError> {
    let mut by_tenant: BTreeMap<&str, Vec<&ClaimedTimer>> = BTreeMap::new();
    for timer in claimed {
        by_tenant.entry(&timer.tenant).or_default().push(timer);
    }
    let zstd_level = broker.config.push.zstd_level;
    let mut fires = Vec::with_capacity(by_tenant.len());
    for (tenant, timers) in by_tenant {
        let tenant = Tenant::from_stored(tenant);
        let mut items = Vec::with_capacity(timers.len());
        let mut ids = Vec::with_capacity(timers.len());
        for timer in &timers {
            items.push(message(timer)?);
            ids.push(timer.message_id);
        }
        order::check(
            broker,
            &tenant,
            items.iter().map(|i| (&i.queue, &i.partition)),
        )?;
        let prepared = prepare_with_ids(broker, &tenant, &items, Vec::new(), ids).await?;
        let outcomes = stage(tx, broker, &tenant, &items, &prepared, zstd_level).await?;
        if let Some(error) = outcomes.iter().find_map(|o| o.status.error()) {
            return Err(FireError::Refused(error));
        }
        fires.push(TenantFire {
            tenant,
            items,
            outcomes,
        });
    }
    Ok(fires)
}

/// The message a timer becomes.
fn message(timer: &ClaimedTimer) -> Result<PushItem, FireError> {
    let refused = |what: &str| {
        FireError::Refused(format!("timer {:?}: stored {what} is not valid", timer.key))
    };
    Ok(PushItem {
        queue: QueueName::parse(timer.queue.as_str()).map_err(|_| refused("queue"))?,
        partition: PartitionName::parse(timer.partition.as_str())
            .map_err(|_| refused("partition"))?,
        payload: timer.payload.clone(),
        transaction_id: Some(timer.txn.clone()),
        trace_id: None,
        producer: None,
    })
}
