//! The wrappers of the streams functions (`sql/functions/streams_*_v1.sql`): registration
//! and state reads in one round trip each, and the SQL part of a cycle inside the caller's
//! transaction.

use serde_json::Value;
use tokio_postgres::Statement;
use tracing::instrument;

use super::transaction::DataTransaction;
use super::{DbError, PgConn};
use crate::domain::streams::{Cycle, Registration, StateQuery};
use crate::segment::txn_hash::txn_hash;

const REGISTER: &str = "SELECT queen.streams_register_v1($1, $2, $3, $4, $5, $6)";
const STATE_GET: &str = "SELECT queen.streams_state_get_v1($1, $2, $3, $4, $5, $6)::text";
const CYCLE: &str = "SELECT queen.streams_cycle_v1($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)";

/// Registers a query for `tenant`: the function's object (`ok`, `query_id`, `fresh`,
/// `reset`, or `registered` on a hash mismatch).
#[instrument(skip_all, fields(db.system = "postgresql", db.operation = "streams_register_v1"))]
pub async fn register(conn: &mut PgConn, tenant: &str, r: &Registration) -> Result<Value, DbError> {
    let st = conn.statement("streams_register_v1", REGISTER).await?;
    let sink = r.sink_queue.as_ref().map(|q| q.as_str());
    let row = conn
        .client()
        .query_one(
            &st,
            &[
                &tenant,
                &r.name,
                &r.source_queue.as_str(),
                &sink,
                &r.config_hash,
                &r.reset,
            ],
        )
        .await
        .map_err(|e| DbError::query("streams_register_v1", e))?;
    Ok(row.get(0))
}

/// Reads state rows: the answer's JSON text (`{success, rows}`), `None` when `tenant` has
/// no such query.
#[instrument(skip_all, fields(db.system = "postgresql", db.operation = "streams_state_get_v1"))]
pub async fn state_get(
    conn: &mut PgConn,
    tenant: &str,
    q: &StateQuery,
) -> Result<Option<String>, DbError> {
    let st = conn.statement("streams_state_get_v1", STATE_GET).await?;
    let row = conn
        .client()
        .query_opt(
            &st,
            &[
                &tenant,
                &q.query_id,
                &q.partition_id,
                &q.keys,
                &q.key_prefix,
                &q.ripe_at_or_before,
            ],
        )
        .await
        .map_err(|e| DbError::query("streams_state_get_v1", e))?;
    Ok(row.and_then(|r| r.get(0)))
}

/// Prepares (once per connection) the statement of [`cycle_in`]; call it before the
/// transaction opens.
pub async fn cycle_statement(conn: &mut PgConn) -> Result<Statement, DbError> {
    conn.statement("streams_cycle_v1", CYCLE).await
}

/// Runs the SQL part of `cycle` (fence, ack, state ops) inside `tx` and answers the
/// function's object: `{ok: true, released, queue, partition, pending_after}` or `{ok:
/// false, code, error}` with nothing written.
#[instrument(skip_all, fields(db.system = "postgresql", db.operation = "streams_cycle_v1"))]
pub async fn cycle_in(
    tx: &DataTransaction<'_>,
    st: &Statement,
    tenant: &str,
    cycle: &Cycle,
) -> Result<Value, DbError> {
    let ack = cycle.ack.as_ref();
    let lease = ack.map(|a| a.lease_id.as_str());
    let txn = ack.and_then(|a| a.transaction_id.as_deref());
    let hash = txn.map(txn_hash);
    let count = ack.map(|a| a.count);
    let row = tx
        .client()
        .query_one(
            st,
            &[
                &tenant,
                &cycle.query_id,
                &cycle.partition_id,
                &cycle.group.as_str(),
                &lease,
                &txn,
                &hash,
                &count,
                &cycle.release_lease,
                &cycle.state_ops,
            ],
        )
        .await
        .map_err(|e| DbError::query("streams_cycle_v1", e))?;
    Ok(row.get(0))
}
