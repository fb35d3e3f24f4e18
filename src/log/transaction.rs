//! Transaction bundles: pushes, acks, the `kv` rider and the `timers` rider applied in one
//! PostgreSQL transaction, all or nothing, behind the `requiredLeases` fence.
//!
//! The bundle arrives parsed (from the JSON body today, from the binary `QTB1` body later),
//! so this file owns only the meaning: lease borrowing, the flat result index space, what
//! rolls a bundle back, and telling the actors after the commit. Push and ack semantics are
//! exactly [`stage`] and [`ack::stage`], the same code `/api/v1/push` and
//! `/api/v1/ack` run.

use serde_json::Value;
use tracing::{debug, instrument, warn};
use uuid::Uuid;

use crate::broker::Broker;
use crate::db::ack::AckVerdict;
use crate::db::transaction::DataTransaction;
use crate::db::{DbError, PgConn};
use crate::domain::kv::KvBatch;
use crate::domain::timers::TimerBatch;
use crate::domain::{ConsumerGroup, PushItem, PushOutcome, Tenant};
use crate::log::ack::{self, Ack};
use crate::log::push::announce;
use crate::log::push::error::PushError;
use crate::log::push::prepare;
use crate::log::push::prepared::PreparedPush;
use crate::log::push::stage::stage;
use crate::log::spool::order::{self, Held};

mod kv_rider;
mod plan;
mod timers_rider;

use plan::{Plan, Step};

/// Whole attempts of a bundle that met a deadlock or serialisation failure. Everything is
/// rolled back before the next attempt, so a retry cannot apply anything twice; three
/// covers the crossing lock orders two bundles can take without hiding a real problem.
const MAX_ATTEMPTS: usize = 3;

/// One operation of a bundle, in the caller's order.
#[derive(Debug, Clone)]
pub enum Operation {
    /// Items to store; each takes one slot of the flat result index space.
    Push(Vec<PushItem>),
    /// One acknowledgement; one slot.
    Ack(BundleAck),
}

/// An acknowledgement inside a bundle: `/api/v1/ack`'s fields plus its own consumer group.
#[derive(Debug, Clone)]
pub struct BundleAck {
    /// The consumer group (queue mode when the client sent none).
    pub group: ConsumerGroup,
    /// The ack; an empty `lease_id` means the client sent none (see [`Bundle`]).
    pub ack: Ack,
}

/// A parsed transaction bundle.
#[derive(Debug, Clone, Default)]
pub struct Bundle {
    /// Pushes and acks, in the caller's order.
    pub operations: Vec<Operation>,
    /// Leases that must be live at commit time. When exactly one (distinct) lease is named,
    /// acks without a lease of their own are fenced by it.
    pub required_leases: Vec<String>,
    /// The `kv` rider: KV ops (lock guards and `once` gates among them) run in the same
    /// transaction, after the lease fence and before the operations; their slots follow
    /// the operations' in the flat index space.
    pub kv: KvBatch,
    /// The `timers` rider: schedules, reschedules and cancels run in the same transaction,
    /// after the `kv` rider; their slots follow the `kv` rider's in the flat index space.
    pub timers: TimerBatch,
}

/// The result of one slot of the flat index space.
#[derive(Debug, Clone)]
pub enum OpResult {
    /// A pushed item: queued or duplicate, exactly as `/api/v1/push` answers it.
    Pushed(PushOutcome),
    /// An applied ack, with the lease it was fenced by.
    Acked {
        /// The ack as applied (its `lease_id` possibly borrowed).
        ack: Ack,
        /// What `queen.log_ack_v2` said.
        verdict: AckVerdict,
    },
    /// One op of the `kv` rider: the object `queen.kv_apply_v1` answered for it.
    Kv(Value),
    /// One op of the `timers` rider: the object `queen.timers_apply_v1` answered for it.
    Timer(Value),
}

/// How a bundle ended.
#[derive(Debug, Clone)]
pub enum BundleOutcome {
    /// Everything was applied and committed.
    Committed {
        /// The bundle's id.
        transaction_id: Uuid,
        /// One result per pushed item and per ack, in operation order.
        results: Vec<OpResult>,
    },
    /// Nothing was applied.
    RolledBack {
        /// The bundle's id.
        transaction_id: Uuid,
        /// What failed, for the client.
        error: String,
        /// The flat index of the failing slot, when one slot is to blame.
        failed_index: Option<usize>,
    },
    /// A `kv` op marked `required` lost its precondition: nothing was applied. An
    /// expected outcome (a `once` gate met again, a lock guard after the lock moved), so
    /// it carries what the client needs to decide without another call.
    PreconditionLost {
        /// The bundle's id.
        transaction_id: Uuid,
        /// What lost, its flat index among them.
        lost: KvPrecondition,
    },
}

/// The lost precondition of a `required` KV op, as `queen.kv_apply_v1` reported it.
#[derive(Debug, Clone)]
pub struct KvPrecondition {
    /// The op's flat index: the operations' slots, then the rider's index.
    pub failed_index: usize,
    /// Why it lost: `exists`, `absent`, `version`, `limit` or `type`.
    pub kv_reason: Value,
    /// The key's current version (null when absent).
    pub version: Value,
    /// The key's current value (null when absent): a lock guard's holder reads its owner.
    pub value: Value,
}

/// Why a bundle could not be decided (as opposed to a refused operation, which is a
/// [`BundleOutcome::RolledBack`]). Nothing was applied.
#[derive(Debug, thiserror::Error)]
pub enum TransactionError {
    /// The database failed; everything rolled back.
    #[error("transaction could not be applied")]
    Db(#[from] DbError),
    /// A push could not be built (a segment not compressed, an encrypted queue without a
    /// key on this node).
    #[error("push could not be built")]
    Push(#[source] PushError),
    /// A push of the bundle would overtake pushes the spool holds (push maintenance, or a
    /// partition with spooled records): refused whole, retryable (see
    /// [`crate::log::spool::order`]).
    #[error(transparent)]
    Held(#[from] Held),
    /// The commit of a bundle that writes KV was sent and no answer came back: it may have
    /// applied. Not a 5xx, which the client would resend (an `incr` would count twice).
    #[error("the transaction's outcome is unknown: {0}")]
    CommitInDoubt(#[source] DbError),
    /// `queen.kv_apply_v1` answered neither results for every op nor a lost precondition:
    /// the function and this broker disagree. Rolled back.
    #[error("kv_apply_v1 answered no result per op")]
    KvAnswer,
    /// `queen.timers_apply_v1` answered no result for every op. Rolled back.
    #[error("timers_apply_v1 answered no result per op")]
    TimersAnswer,
}

impl From<PushError> for TransactionError {
    fn from(e: PushError) -> Self {
        match e {
            PushError::Db(db) => TransactionError::Db(db),
            other => TransactionError::Push(other),
        }
    }
}

/// Applies `bundle` in one PostgreSQL transaction: the lease fence first (it locks the
/// leased partitions until the end), then every operation in order. The first refused
/// operation rolls everything back. After the commit, and only then, the group actors and
/// the peers hear about the pushes and the released leases.
#[instrument(skip_all, fields(batch_size = bundle.operations.len()))]
pub async fn apply(
    broker: &Broker,
    tenant: &Tenant,
    bundle: &Bundle,
    zstd_level: i32,
) -> Result<BundleOutcome, TransactionError> {
    let transaction_id = Uuid::now_v7();
    let plan = Plan::new(bundle);
    // The spool's order: checked before anything is prepared or locked. A bundle without
    // pushes appends nothing and is never held.
    order::check(
        broker,
        tenant,
        plan.steps
            .iter()
            .flat_map(|step| match step {
                Step::Push { items, .. } => items.as_slice(),
                Step::Acks { .. } => &[],
            })
            .map(|item| (&item.queue, &item.partition)),
    )?;
    if bundle.operations.is_empty()
        && plan.leases.is_empty()
        && bundle.kv.ops.is_empty()
        && bundle.timers.ops.is_empty()
    {
        return Ok(BundleOutcome::Committed {
            transaction_id,
            results: Vec::new(),
        });
    }

    // Ids and sealed payloads, before any connection is held (sealing may read queue
    // options on a connection of its own); one per step, `None` for ack steps.
    let mut prepared: Vec<Option<PreparedPush>> = Vec::with_capacity(plan.steps.len());
    for step in &plan.steps {
        prepared.push(match step {
            Step::Push { items, .. } => Some(prepare(broker, tenant, items, Vec::new()).await?),
            Step::Acks { .. } => None,
        });
    }

    let mut attempt = 1;
    let verdict = loop {
        let mut conn = broker.db.conn().await?;
        let work = Work {
            plan: &plan,
            kv: &bundle.kv,
            timers: &bundle.timers,
            prepared: &prepared,
            zstd_level,
        };
        match run(&mut conn, broker, tenant, &work).await {
            Err(TransactionError::Db(error)) => {
                let error = conn.note(error);
                if error.is_retryable() && attempt < MAX_ATTEMPTS {
                    debug!(error = %error, attempt, "transaction bundle retried");
                    attempt += 1;
                    continue;
                }
                return Err(error.into());
            }
            other => break other?,
        }
    };

    Ok(match verdict {
        Verdict::Commit(results) => {
            announce(broker, tenant, &plan, &results);
            if let Some(delay_ms) = bundle.timers.earliest_delay_ms() {
                broker.timers.due_in(delay_ms);
            }
            BundleOutcome::Committed {
                transaction_id,
                results,
            }
        }
        Verdict::Rollback {
            error,
            failed_index,
        } => {
            debug!(error = %error, failed_index, "transaction bundle rolled back");
            BundleOutcome::RolledBack {
                transaction_id,
                error,
                failed_index,
            }
        }
        Verdict::Lost(lost) => {
            debug!(failed_index = lost.failed_index, "kv precondition lost");
            BundleOutcome::PreconditionLost {
                transaction_id,
                lost,
            }
        }
    })
}

enum Verdict {
    Commit(Vec<OpResult>),
    Rollback {
        error: String,
        failed_index: Option<usize>,
    },
    Lost(KvPrecondition),
}

/// What one attempt applies: the plan, the `kv` rider, the prepared pushes.
struct Work<'a> {
    plan: &'a Plan,
    kv: &'a KvBatch,
    timers: &'a TimerBatch,
    /// One per step, `None` for ack steps.
    prepared: &'a [Option<PreparedPush>],
    zstd_level: i32,
}

/// One attempt: opens the transaction, applies the plan and commits or rolls back. Every
/// path ends the transaction explicitly, so the connection goes back to the pool idle.
async fn run(
    conn: &mut PgConn,
    broker: &Broker,
    tenant: &Tenant,
    work: &Work<'_>,
) -> Result<Verdict, TransactionError> {
    let tx = DataTransaction::begin(conn).await?;
    match apply_plan(&tx, broker, tenant, work).await {
        Ok(Verdict::Commit(results)) => {
            tx.commit().await.map_err(|e| {
                // A KV write (an `incr`) must not be applied twice by a resend: a commit
                // whose answer never came is in doubt, not failed.
                if (work.kv.writes() || !work.timers.ops.is_empty()) && !e.server_answered() {
                    TransactionError::CommitInDoubt(e)
                } else {
                    TransactionError::Db(e)
                }
            })?;
            Ok(Verdict::Commit(results))
        }
        Ok(rollback) => {
            tx.rollback().await?;
            Ok(rollback)
        }
        Err(error) => {
            if let Err(rollback) = tx.rollback().await {
                warn!(error = %rollback, "transaction bundle rollback failed");
            }
            Err(error)
        }
    }
}

async fn apply_plan(
    tx: &DataTransaction<'_>,
    broker: &Broker,
    tenant: &Tenant,
    work: &Work<'_>,
) -> Result<Verdict, TransactionError> {
    let plan = work.plan;
    if let Some(lost) = tx
        .require_leases(tenant.as_str(), &plan.leases)
        .await?
        .first()
    {
        return Ok(Verdict::Rollback {
            error: format!("Invalid or expired lease: required lease {lost} is not live"),
            failed_index: plan.first_slot_of(lost),
        });
    }
    // The rider first: a lost `required` op (the usual end of a redelivered `once`) then
    // costs no push or ack work; its row locks hold until the commit either way.
    let kv_results = if work.kv.ops.is_empty() {
        Vec::new()
    } else {
        match kv_rider::apply(tx, tenant, work.kv, plan.slots).await? {
            kv_rider::RiderOutcome::Applied(results) => results,
            kv_rider::RiderOutcome::Lost(lost) => return Ok(Verdict::Lost(lost)),
        }
    };
    let timer_results = if work.timers.ops.is_empty() {
        Vec::new()
    } else {
        timers_rider::apply(tx, tenant, work.timers).await?
    };
    let mut results = Vec::with_capacity(plan.slots + kv_results.len() + timer_results.len());
    for (step, prepared) in plan.steps.iter().zip(work.prepared) {
        match step {
            Step::Push { first, items } => {
                let prepared = prepared.as_ref().expect("every push step was prepared");
                match stage(tx, broker, tenant, items, prepared, work.zstd_level).await {
                    Ok(outcomes) => {
                        // All or nothing: an item refused for maxSize refuses the bundle.
                        if let Some((index, error)) = outcomes
                            .iter()
                            .enumerate()
                            .find_map(|(k, o)| o.status.error().map(|e| (k, e)))
                        {
                            return Ok(Verdict::Rollback {
                                error,
                                failed_index: Some(first + index),
                            });
                        }
                        results.extend(outcomes.into_iter().map(OpResult::Pushed))
                    }
                    Err(e @ PushError::Frame { index, .. }) => {
                        return Ok(Verdict::Rollback {
                            error: e.to_string(),
                            failed_index: Some(first + index),
                        })
                    }
                    Err(e) => return Err(e.into()),
                }
            }
            Step::Acks { first, group, acks } => {
                let verdicts = ack::stage(tx, broker, tenant, group, acks).await?;
                if let Some(k) = verdicts.iter().position(|v| !v.success) {
                    let reason = verdicts[k].error.as_deref().unwrap_or("ack refused");
                    return Ok(Verdict::Rollback {
                        error: reason.to_owned(),
                        failed_index: Some(first + k),
                    });
                }
                results.extend(
                    acks.iter()
                        .cloned()
                        .zip(verdicts)
                        .map(|(ack, verdict)| OpResult::Acked { ack, verdict }),
                );
            }
        }
    }
    results.extend(kv_results.into_iter().map(OpResult::Kv));
    results.extend(timer_results.into_iter().map(OpResult::Timer));
    Ok(Verdict::Commit(results))
}

/// After the commit: pushes to the group actors and the mesh, released leases to the
/// group actors (ack-promotes), exactly as the plain routes announce them.
fn announce(broker: &Broker, tenant: &Tenant, plan: &Plan, results: &[OpResult]) {
    for step in &plan.steps {
        match step {
            Step::Push { first, items } => {
                let outcomes: Vec<PushOutcome> = results[*first..first + items.len()]
                    .iter()
                    .filter_map(|r| match r {
                        OpResult::Pushed(o) => Some(o.clone()),
                        OpResult::Acked { .. } | OpResult::Kv(_) | OpResult::Timer(_) => None,
                    })
                    .collect();
                announce::announce(broker, tenant, items, &outcomes);
            }
            Step::Acks { first, group, acks } => {
                let verdicts: Vec<AckVerdict> = results[*first..first + acks.len()]
                    .iter()
                    .filter_map(|r| match r {
                        OpResult::Acked { verdict, .. } => Some(verdict.clone()),
                        OpResult::Pushed(_) | OpResult::Kv(_) | OpResult::Timer(_) => None,
                    })
                    .collect();
                ack::announce(broker, tenant, group, acks, &verdicts);
            }
        }
    }
}
