//! Pop: ask the group actor for a plan, do the database work it calls for (with a limiter
//! permit and a pooled connection, released before any wait), and with `wait=true` park on
//! the group's wake gate under the seed's bounded backoff until something arrives or the
//! deadline passes.
//!
//! The order is the seed's: the actor's in-memory check first (an empty ring answers empty
//! with no permit and no connection), then a permit and a connection, then SQL.
//!
//! An auto-ack claim moves the cursor, which is the only record of the delivery: it runs in
//! a transaction that stays open until the caller has rendered the answer ([`Claim`]), so a
//! delivery that cannot be rendered (a damaged segment, a payload sealed under another
//! node's key) is rolled back instead of lost. A leased claim commits at once (its lease is
//! a reservation the caller can give back, see [`unrenderable`]).

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use actix::MailboxError;
use chrono::{DateTime, Utc};
use tokio::sync::oneshot;
use tracing::{instrument, warn};
use uuid::Uuid;

use crate::actors::group::{Park, PlanPop, PopPlan, Seen, WildcardDone};
use crate::actors::wake_gate::WakeSource;
use crate::actors::GroupKey;
use crate::broker::{Broker, MIN_POP_WAIT_IN_USE};
use crate::config::PopConfig;
use crate::db::groups;
use crate::db::pop::{claim, partition_lease, ClaimParams, ClaimedSlice, PopScope};
use crate::db::{Conn, DbError};
use crate::domain::{ConsumerGroup, PartitionName, QueueName, Tenant};
use crate::metrics::Metrics;

mod claim;
mod hotlist;
mod park;
pub mod unrenderable;

pub use claim::{Claim, Delivery};

/// The least and the most time between two writes of a waiting group's `last_seen_at`
/// (see [`seen`]).
const SEEN_MIN: Duration = Duration::from_secs(1);
const SEEN_MAX: Duration = Duration::from_secs(60);

/// Which partitions a pop may claim from (validated names).
#[derive(Debug, Clone)]
pub enum Scope {
    /// Any partition of a queue.
    Queue(QueueName),
    /// One partition of a queue.
    Partition(QueueName, PartitionName),
    /// Any queue matching a namespace and/or task (at least one is set).
    Discover {
        /// Namespace filter.
        namespace: Option<String>,
        /// Task filter.
        task: Option<String>,
    },
}

/// Where a new consumer group starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SubscriptionMode {
    /// Everything retained.
    All,
    /// Only messages pushed after the group's first contact.
    New,
}

/// A validated pop request.
#[derive(Debug, Clone)]
pub struct PopRequest {
    /// What to claim from.
    pub scope: Scope,
    /// The consumer group.
    pub group: ConsumerGroup,
    /// Global message budget (default 200).
    pub batch: u32,
    /// Partitions to claim at most (default 1).
    pub partitions: u32,
    /// Long-poll until the deadline when nothing is there.
    pub wait: bool,
    /// The long-poll deadline.
    pub timeout: Duration,
    /// Commit on delivery (no lease, at-most-once).
    pub auto_ack: bool,
    /// Lease length override in seconds.
    pub lease_seconds: Option<i32>,
    /// Start of a new group.
    pub subscription_mode: SubscriptionMode,
    /// Start time of a new group; wins over the mode.
    pub subscription_from: Option<DateTime<Utc>>,
}

/// One pop in progress: the request, its lease id and its deadline.
struct Pop<'a> {
    broker: &'a Broker,
    tenant: &'a Tenant,
    req: &'a PopRequest,
    worker: String,
    deadline: Instant,
}

impl<'a> Pop<'a> {
    fn params(&self) -> ClaimParams<'_> {
        ClaimParams {
            tenant: self.tenant.as_str(),
            group: self.req.group.as_str(),
            worker: &self.worker,
            batch: i32::try_from(self.req.batch).unwrap_or(i32::MAX),
            partitions: i32::try_from(self.req.partitions).unwrap_or(i32::MAX),
            lease_seconds: self.req.lease_seconds,
            auto_ack: self.req.auto_ack,
            subscription_mode: match self.req.subscription_mode {
                SubscriptionMode::All => "all",
                SubscriptionMode::New => "new",
            },
            subscription_from: self.req.subscription_from,
        }
    }

    /// One SQL claim through the wildcard, specific or discover procedure.
    async fn claim(&self, scope: &PopScope<'_>) -> Result<Option<Claim<'a>>, DbError> {
        let metrics = &self.broker.metrics;
        Metrics::bump(match scope {
            PopScope::Wildcard { .. } => &metrics.sql_wildcard,
            PopScope::Specific { .. } => &metrics.sql_specific,
            PopScope::Discover { .. } => &metrics.sql_discover,
        });
        let _permit = self.broker.permit().await?;
        let mut conn = self.claim_conn().await?;
        let slices = claim(&mut conn, scope, &self.params()).await;
        self.finish(conn, slices, &self.worker).await
    }

    /// The lease id a one-partition claim grants: the pop's id naming the partition, so
    /// PostgreSQL finds the lease's row by its primary key and the claim's update touches
    /// no indexed column (sql/functions/lease_holders_v1.sql). Empty with auto-ack.
    fn named_lease(&self, partition_id: i64) -> String {
        if self.worker.is_empty() {
            String::new()
        } else {
            partition_lease(&self.worker, partition_id)
        }
    }

    /// A connection for a claim; an auto-ack pop opens its transaction on it.
    async fn claim_conn(&self) -> Result<Conn<'a>, DbError> {
        let mut conn = self.broker.db.conn().await?;
        if self.req.auto_ack {
            conn.begin().await?;
        }
        Ok(conn)
    }

    /// Ends a claim made on `conn` under `lease`. A failed or empty auto-ack claim ends its
    /// transaction now (an empty claim may still have sealed a cursor or seeded a first
    /// contact); a delivered one keeps it open in the [`Claim`].
    async fn finish(
        &self,
        mut conn: Conn<'a>,
        slices: Result<Vec<ClaimedSlice>, DbError>,
        lease: &str,
    ) -> Result<Option<Claim<'a>>, DbError> {
        let auto_ack = self.req.auto_ack;
        let slices = match slices {
            Ok(slices) => slices,
            Err(e) => {
                if auto_ack {
                    // Best effort: a connection left in the transaction is discarded anyway.
                    let _ = conn.rollback().await;
                }
                return Err(e);
            }
        };
        if slices.is_empty() {
            if auto_ack {
                conn.commit().await?;
            }
            return Ok(None);
        }
        Ok(Some(Claim {
            delivery: Delivery {
                lease_id: lease.to_owned(),
                slices,
            },
            open: auto_ack.then_some(conn),
        }))
    }

    /// Time left to wait; none when not waiting, past the deadline, or draining.
    fn time_left(&self) -> Option<Duration> {
        let now = Instant::now();
        (self.req.wait && now < self.deadline && !self.broker.is_draining())
            .then(|| self.deadline - now)
    }
}

/// Runs a pop; `None` means nothing to deliver before the deadline. An auto-ack delivery
/// is committed only by [`Claim::commit`].
///
/// Its steps carry its span, not the whole pop: a parked pop's future would keep the span
/// for its whole wait (README, "Parked long-polls").
pub async fn pop<'a>(
    broker: &'a Broker,
    tenant: &'a Tenant,
    req: &'a PopRequest,
) -> Result<Option<Claim<'a>>, DbError> {
    if broker.in_maintenance() {
        Metrics::bump(&broker.metrics.pops_maintenance);
        return Ok(None);
    }
    let pop = Pop {
        broker,
        tenant,
        req,
        worker: if req.auto_ack {
            String::new()
        } else {
            Uuid::now_v7().to_string()
        },
        deadline: Instant::now() + req.timeout,
    };
    let mut retried = false;
    let mut progress = Progress::default();
    loop {
        // Boxed: a step's state (the group actor's plan, its messages, the SQL steps and
        // the group's key) lives only while the step runs, so a parked pop's future keeps
        // its wait and little else (README, "Parked long-polls"; tests/parked).
        let wait = match Box::pin(step(&pop, &mut progress)).await {
            Ok(Step::Done(claim)) => return Ok(claim),
            Ok(Step::Wait(wait)) => wait,
            // Nothing was claimed: the server rolled the failed claim back (a deadlock of
            // a group's first pops on the Citus layout's reference tables, a claim that met
            // its shard moved by a rebalance), so one more try, to the same deadline, is
            // safe and usually gets past it; a second failure answers 503.
            Err(e) if e.is_transient() && !retried => {
                warn!(error = ?e, "pop met a transient database error; trying once more");
                retried = true;
                progress = Progress::default();
                continue;
            }
            Err(e) => return Err(e),
        };
        progress.attempt = if pop.park(wait, progress.attempt).await {
            0
        } else {
            progress.attempt + 1
        };
    }
}

/// How one step of a pop ends.
// A step's answer is moved out of its box once and taken apart at once, so the size of a
// claim (it holds its open connection) costs nothing a parked pop keeps; boxing the claim
// would cost every delivery an allocation.
#[allow(clippy::large_enum_variant)]
enum Step<'a> {
    /// The pop is answered: a claim, or nothing (the deadline passed, or not waiting).
    Done(Option<Claim<'a>>),
    /// Nothing to claim yet: wait as told, then take the next step.
    Wait(Wait),
}

/// How a pop waits between two steps.
struct Wait {
    /// The group's wake gate; none for a pop that only backs off.
    gate: Option<oneshot::Receiver<WakeSource>>,
    /// Parked by the group actor's plan: no backoff, a wake or the deadline ends it.
    until_woken: bool,
    /// How often the wait comes back to write the group's `last_seen_at` ([`seen`]).
    seen_every: Option<Duration>,
}

/// What a pop carries from one step to the next.
#[derive(Default)]
struct Progress {
    /// Waits since the last wake (the backoff's attempt).
    attempt: u32,
    /// The end of the group's minimum-wait hold, once one started.
    hold_until: Option<Instant>,
}

/// One step of [`pop`]: claim what there is, or say how to wait for more.
///
/// Its span is at debug level, as the per-request events are: a span the output layer
/// records lives in the subscriber's registry (a slot, an extensions map and the formatted
/// fields) for as long as it is entered or kept.
#[instrument(
    level = "debug",
    name = "pop",
    skip_all,
    fields(consumer_group = pop.req.group.as_str(), batch_size = pop.req.batch)
)]
async fn step<'a>(pop: &Pop<'a>, progress: &mut Progress) -> Result<Step<'a>, DbError> {
    let req = pop.req;
    match &req.scope {
        Scope::Queue(queue) => serve_queue(pop, queue, progress).await,
        Scope::Partition(queue, partition) => serve_partition(pop, queue, partition).await,
        Scope::Discover { namespace, task } => {
            let scope = PopScope::Discover {
                namespace: namespace.as_deref(),
                task: task.as_deref(),
            };
            if let Some(d) = Box::pin(pop.claim(&scope)).await? {
                return Ok(Step::Done(Some(d)));
            }
            if pop.time_left().is_none() {
                return Ok(Step::Done(None));
            }
            Ok(Step::Wait(Wait {
                gate: None,
                until_woken: false,
                seen_every: None,
            }))
        }
    }
}

/// A named partition: a targeted SQL claim; the group's wake gate (the queue's pushes)
/// shortens the wait.
async fn serve_partition<'a>(
    pop: &Pop<'a>,
    queue: &QueueName,
    partition: &PartitionName,
) -> Result<Step<'a>, DbError> {
    let scope = PopScope::Specific {
        queue: queue.as_str(),
        partition: partition.as_str(),
    };
    if let Some(d) = Box::pin(pop.claim(&scope)).await? {
        return Ok(Step::Done(Some(d)));
    }
    if pop.time_left().is_none() {
        return Ok(Step::Done(None));
    }
    let key = group_key(pop, queue);
    let seen_every = seen_interval(pop, &key);
    if let Some(every) = seen_every {
        Box::pin(seen(pop, &key, every)).await;
    }
    Ok(Step::Wait(Wait {
        gate: pop.broker.registry.group(&key).send(Park).await.ok(),
        until_woken: false,
        seen_every,
    }))
}

/// Any partition of a queue: planned by the group actor.
async fn serve_queue<'a>(
    pop: &Pop<'a>,
    queue: &QueueName,
    progress: &mut Progress,
) -> Result<Step<'a>, DbError> {
    let key = group_key(pop, queue);
    loop {
        let plan = plan(pop, &key).await;
        let mut until_woken = false;
        let gate = match plan {
            PopPlan::Empty { parked } => {
                until_woken = true;
                parked
            }
            PopPlan::Wildcard => {
                let claimed = Box::pin(pop.claim(&PopScope::Wildcard {
                    queue: queue.as_str(),
                }))
                .await;
                pop.broker.registry.group(&key).do_send(WildcardDone);
                if let Some(d) = claimed? {
                    return Ok(Step::Done(Some(d)));
                }
                None
            }
            PopPlan::Reseed(ticket) => {
                Box::pin(hotlist::reseed(pop, &key, ticket)).await?;
                continue;
            }
            PopPlan::Candidates {
                loan,
                skip_window,
                min_wait,
                pending_estimate,
            } => {
                if MIN_POP_WAIT_IN_USE.load(Ordering::Relaxed) && !min_wait.is_zero() {
                    let until = *progress.hold_until.get_or_insert_with(|| {
                        Metrics::bump(&pop.broker.metrics.min_wait_holds);
                        (Instant::now() + min_wait).min(pop.deadline)
                    });
                    if pending_estimate < i64::from(pop.req.batch) && Instant::now() < until {
                        drop(loan); // back to the ring; wait for more pushes or the window
                        let gate = pop.broker.registry.group(&key).send(Park).await.ok();
                        let left = until.saturating_duration_since(Instant::now());
                        if let Some(gate) = gate {
                            let _ = tokio::time::timeout(left, gate).await;
                        }
                        continue;
                    }
                }
                let claimed =
                    Box::pin(hotlist::claim_candidates(pop, queue, loan, skip_window)).await?;
                if let Some(d) = claimed {
                    Metrics::bump(&pop.broker.metrics.pops_from_ring);
                    return Ok(Step::Done(Some(d)));
                }
                None
            }
            PopPlan::Legacy { hints } => {
                if let Some(d) = Box::pin(hotlist::legacy(pop, queue, hints)).await? {
                    return Ok(Step::Done(Some(d)));
                }
                None
            }
        };
        if pop.time_left().is_none() {
            return Ok(Step::Done(None));
        }
        let seen_every = seen_interval(pop, &key);
        if let Some(every) = seen_every {
            Box::pin(seen(pop, &key, every)).await;
        }
        let gate = match gate {
            Some(gate) => Some(gate),
            None => pop.broker.registry.group(&key).send(Park).await.ok(),
        };
        return Ok(Step::Wait(Wait {
            gate,
            until_woken,
            seen_every,
        }));
    }
}

/// How often a waiting group's `last_seen_at` is written: a quarter of the idle limit
/// (`QUEEN_IDLE_GROUP_SECS`), 1 s to 60 s; `None` with the idle sweep off or in queue mode,
/// which nothing sweeps.
fn seen_interval(pop: &Pop<'_>, key: &GroupKey) -> Option<Duration> {
    let idle = pop.broker.config.retention.idle_group_secs;
    (idle > 0 && !key.group.is_queue_mode())
        .then(|| (Duration::from_secs(idle as u64) / 4).clamp(SEEN_MIN, SEEN_MAX))
}

/// Before a pop of a named group waits for messages: has the group's `last_seen_at`
/// written when its actor says one is due ([`Seen`]), so the idle-group sweep does not
/// forget a group that is waiting, not abandoned. At most one write per group, node and
/// `every` ([`seen_interval`]). A failure is logged; the pop waits anyway.
async fn seen(pop: &Pop<'_>, key: &GroupKey, every: Duration) {
    let due = pop.broker.registry.group(key).send(Seen { every }).await;
    if !matches!(due, Ok(true)) {
        return;
    }
    let written = async {
        let mut conn = pop.broker.db.conn().await?;
        groups::seen(
            &mut conn,
            key.tenant.as_str(),
            key.queue.as_str(),
            key.group.as_str(),
        )
        .await
    };
    if let Err(e) = written.await {
        warn!(error = %e, "could not record a waiting consumer group as seen");
    }
}

fn group_key(pop: &Pop<'_>, queue: &QueueName) -> GroupKey {
    GroupKey {
        tenant: pop.tenant.clone(),
        queue: queue.clone(),
        group: pop.req.group.clone(),
    }
}

/// Asks the group actor for a plan; an actor that just stopped (idle) is replaced once.
async fn plan(pop: &Pop<'_>, key: &GroupKey) -> PopPlan {
    let msg = || PlanPop {
        partitions: pop.req.partitions,
        park_if_empty: pop.req.wait,
    };
    for _ in 0..2 {
        match pop.broker.registry.group(key).send(msg()).await {
            Ok(plan) => return plan,
            Err(MailboxError::Closed | MailboxError::Timeout) => continue,
        }
    }
    // The actor cannot be reached: fall back to the SQL path, which is always correct.
    PopPlan::Wildcard
}

/// The seed's bounded backoff: the initial interval for the first `threshold` attempts,
/// then `initial × attempt × multiplier`, capped at the maximum.
pub fn wait_interval(attempt: u32, cfg: &PopConfig) -> Duration {
    if attempt <= cfg.backoff_threshold {
        return cfg.wait_initial;
    }
    let grown = cfg.wait_initial.as_secs_f64() * f64::from(attempt) * cfg.backoff_multiplier;
    Duration::from_secs_f64(grown.min(cfg.wait_max.as_secs_f64()).max(0.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg() -> PopConfig {
        PopConfig {
            default_timeout: Duration::from_secs(30),
            wait_initial: Duration::from_millis(100),
            backoff_threshold: 3,
            backoff_multiplier: 2.0,
            wait_max: Duration::from_millis(1000),
            hotlist: true,
            ack_sync_commit: None,
            reseed_every: Duration::from_secs(5),
        }
    }

    /// The size of the future an async fn returns, without calling it.
    fn output_size<A, B, C, F: std::future::Future>(_: fn(A, B, C) -> F) -> usize {
        std::mem::size_of::<F>()
    }

    /// A parked pop keeps its future for its whole wait, so the SQL steps (kilobytes of
    /// state each) are boxed: the queue pop's future must be smaller than any of them.
    #[test]
    fn a_queue_pop_future_does_not_hold_its_sql_steps_inline() {
        let queue: fn(&'static Pop<'static>, &'static QueueName, &'static mut Progress) -> _ =
            |p, q, progress| serve_queue(p, q, progress);
        let candidates: fn(
            &'static Pop<'static>,
            &'static QueueName,
            crate::actors::group::Loan,
        ) -> _ = |p, q, l| hotlist::claim_candidates(p, q, l, false);
        let claim: fn(&'static Pop<'static>, &'static PopScope<'static>, u8) -> _ =
            |p, s, _| p.claim(s);
        let (queue, candidates, claim) = (
            output_size(queue),
            output_size(candidates),
            output_size(claim),
        );
        assert!(
            queue < candidates.min(claim),
            "serve_queue {queue} bytes, claim_candidates {candidates}, claim {claim}"
        );
    }

    /// A parked pop keeps [`pop`]'s future for its whole wait, so the steps between its
    /// waits (the actor's plan, the SQL, the group's key) are boxed: the pop's future is
    /// smaller than one step's.
    #[test]
    fn a_pop_future_does_not_hold_a_step_inline() {
        let pop: fn(&'static Broker, &'static Tenant, &'static PopRequest) -> _ = pop;
        let step: fn(&'static Pop<'static>, &'static mut Progress, u8) -> _ =
            |p, progress, _| step(p, progress);
        let (pop, step) = (output_size(pop), output_size(step));
        assert!(pop < step, "pop {pop} bytes, one step {step}");
    }

    #[test]
    fn the_backoff_stays_at_the_initial_interval_then_grows_to_the_cap() {
        let cfg = cfg();
        let ms: Vec<u128> = (1..=7)
            .map(|a| wait_interval(a, &cfg).as_millis())
            .collect();
        assert_eq!(ms, vec![100, 100, 100, 800, 1000, 1000, 1000]);
    }
}
