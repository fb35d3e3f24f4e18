//! A streams cycle (`POST /streams/v1/cycle`): the state ops, the sink pushes and the ack
//! of a prefix of the source's leased batch in one PostgreSQL transaction, all or nothing.
//!
//! The fence, the ack and the state ops are one call of `queen.streams_cycle_v1`, which
//! also serialises the cycles of one (query, partition); the pushes go through the same
//! staged push as `/api/v1/push` and a transaction bundle ([`stage`]). After the commit,
//! and only then, the pushes are announced to parked pops and peers, and a released lease
//! with messages left behind goes back to its group's ring (an ack-promote), exactly as
//! the plain routes do. docs/pop.md "Streams: a prefix of a leased batch" is the lease
//! primitive.

use serde_json::Value;
use tracing::{debug, instrument, warn};

use crate::broker::Broker;
use crate::db::ack::AckVerdict;
use crate::db::streams::{cycle_in, cycle_statement};
use crate::db::transaction::DataTransaction;
use crate::db::PgConn;
use crate::domain::streams::Cycle;
use crate::domain::{PushOutcome, Tenant};
use crate::log::ack::{self, Ack};
use crate::log::push::announce;
use crate::log::push::error::PushError;
use crate::log::push::prepare;
use crate::log::push::prepared::PreparedPush;
use crate::log::push::stage::stage;
use crate::log::spool::order;
use crate::log::transaction::TransactionError;
use crate::metrics::Metrics;

/// Whole attempts of a cycle that met a deadlock or serialisation failure: everything is
/// rolled back before the next one, as for a transaction bundle.
const MAX_ATTEMPTS: usize = 3;

/// How a cycle ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CycleOutcome {
    /// Everything was applied and committed.
    Committed,
    /// Nothing was applied: `code` says why (`lease`, `settled`, `count`,
    /// `unknown_query`, `unknown_partition`, `push`), `error` says it in words.
    Refused {
        /// A stable code.
        code: String,
        /// The text for the client.
        error: String,
    },
}

/// Applies `cycle` for `tenant`. Counts every cycle and every one that ended without
/// committing (`streams` metrics).
#[instrument(skip_all, fields(pushes = cycle.pushes.len(), state_ops = cycle.state_op_count))]
pub async fn apply(
    broker: &Broker,
    tenant: &Tenant,
    cycle: &Cycle,
    zstd_level: i32,
) -> Result<CycleOutcome, TransactionError> {
    Metrics::bump(&broker.metrics.streams_cycles);
    let outcome = attempt_all(broker, tenant, cycle, zstd_level).await;
    if !matches!(outcome, Ok(CycleOutcome::Committed)) {
        Metrics::bump(&broker.metrics.streams_cycles_failed);
    }
    outcome
}

async fn attempt_all(
    broker: &Broker,
    tenant: &Tenant,
    cycle: &Cycle,
    zstd_level: i32,
) -> Result<CycleOutcome, TransactionError> {
    order::check(
        broker,
        tenant,
        cycle.pushes.iter().map(|i| (&i.queue, &i.partition)),
    )?;
    let prepared = prepare(broker, tenant, &cycle.pushes, Vec::new()).await?;
    let mut attempt = 1;
    let (outcome, released) = loop {
        let mut conn = broker.db.conn().await?;
        match run(&mut conn, broker, tenant, cycle, &prepared, zstd_level).await {
            Err(TransactionError::Db(error)) => {
                let error = conn.note(error);
                if error.is_retryable() && attempt < MAX_ATTEMPTS {
                    debug!(error = %error, attempt, "streams cycle retried");
                    attempt += 1;
                    continue;
                }
                return Err(error.into());
            }
            other => break other?,
        }
    };
    if let Some((pushed, released)) = released {
        announce::announce(broker, tenant, &cycle.pushes, &pushed);
        if let (Some(verdict), Some(a)) = (released, cycle.ack.as_ref()) {
            let ack = Ack {
                partition_id: cycle.partition_id,
                transaction_id: a.transaction_id.clone().unwrap_or_default(),
                status: "completed".to_owned(),
                error: None,
                lease_id: a.lease_id.clone(),
            };
            ack::announce(broker, tenant, &cycle.group, &[ack], &[verdict]);
        }
    }
    Ok(outcome)
}

/// What a committed attempt leaves to announce: the pushes' outcomes and, when the ack
/// released the lease, its verdict.
type Committed = (Vec<PushOutcome>, Option<AckVerdict>);

/// One attempt: every path ends the transaction explicitly.
async fn run(
    conn: &mut PgConn,
    broker: &Broker,
    tenant: &Tenant,
    cycle: &Cycle,
    prepared: &PreparedPush,
    zstd_level: i32,
) -> Result<(CycleOutcome, Option<Committed>), TransactionError> {
    let st = cycle_statement(conn).await?;
    let tx = DataTransaction::begin(conn).await?;
    match apply_in(&tx, &st, broker, tenant, cycle, prepared, zstd_level).await {
        Ok(Ok(committed)) => {
            tx.commit().await?;
            Ok((CycleOutcome::Committed, Some(committed)))
        }
        Ok(Err(refused)) => {
            tx.rollback().await?;
            Ok((refused, None))
        }
        Err(error) => {
            if let Err(rollback) = tx.rollback().await {
                warn!(error = %rollback, "streams cycle rollback failed");
            }
            Err(error)
        }
    }
}

fn refused(code: &str, error: impl Into<String>) -> CycleOutcome {
    CycleOutcome::Refused {
        code: code.to_owned(),
        error: error.into(),
    }
}

async fn apply_in(
    tx: &DataTransaction<'_>,
    st: &tokio_postgres::Statement,
    broker: &Broker,
    tenant: &Tenant,
    cycle: &Cycle,
    prepared: &PreparedPush,
    zstd_level: i32,
) -> Result<Result<Committed, CycleOutcome>, TransactionError> {
    let answer = cycle_in(tx, st, tenant.as_str(), cycle).await?;
    if answer.get("ok") != Some(&Value::Bool(true)) {
        let text = |k: &str| answer.get(k).and_then(Value::as_str).unwrap_or("refused");
        return Ok(Err(refused(text("code"), text("error"))));
    }
    let pushed = match stage(tx, broker, tenant, &cycle.pushes, prepared, zstd_level).await {
        Ok(outcomes) => outcomes,
        Err(e @ PushError::Frame { .. }) => return Ok(Err(refused("push", e.to_string()))),
        Err(e) => return Err(e.into()),
    };
    // All or nothing: an item refused (maxSize) refuses the cycle.
    if let Some((index, error)) = pushed
        .iter()
        .enumerate()
        .find_map(|(k, o)| o.status.error().map(|e| (k, e)))
    {
        return Ok(Err(refused(
            "push",
            format!("push_items[{index}]: {error}"),
        )));
    }
    let released = (answer.get("released") == Some(&Value::Bool(true))).then(|| AckVerdict {
        success: true,
        error: None,
        lease_released: true,
        dlq: false,
        queue: answer["queue"].as_str().map(str::to_owned),
        partition: answer["partition"].as_str().map(str::to_owned),
        pending_after: answer["pending_after"].as_i64().unwrap_or(0),
    });
    Ok(Ok((pushed, released)))
}
