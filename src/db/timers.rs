//! The wrappers of the timers' SQL: `queen.timers_apply_v1` (schedule, reschedule,
//! cancel; one round trip per call), the two reads of the routes (one key, a keyset page
//! of a queue) written here as plain statements, and the fire loop's calls
//! (`timers_claim_v1` inside its push transaction, `timers_backoff_v1`,
//! `timers_next_due_v1`, `timers_pending_v1`).

use base64::Engine;
use chrono::{DateTime, Utc};
use serde_json::{json, Value};
use tokio_postgres::Row;
use tracing::instrument;
use uuid::Uuid;

use super::kv::{call_json, KvApplyError};
use super::{DbError, PgConn};
use crate::domain::timers::TimerBatch;

/// The statement: the function's jsonb as text, which the routes answer as it is.
const APPLY: &str = "SELECT queen.timers_apply_v1($1, $2)::text";

/// The statement as a value, for a caller that reads the answer (a transaction's rider).
pub(super) const APPLY_VALUE: &str = "SELECT queen.timers_apply_v1($1, $2)";

/// The fire loop's claim, run inside its push transaction.
pub(super) const CLAIM: &str = "SELECT tenant, queue, timer_key, partition, payload, txn, \
     message_id, late_ms, attempts FROM queen.timers_claim_v1($1)";

const BACKOFF: &str = "SELECT queen.timers_backoff_v1($1, $2, $3, $4)";
const NEXT_DUE: &str = "SELECT queen.timers_next_due_v1()";
const PENDING: &str = "SELECT queen.timers_pending_v1()";

/// One pending timer, as `GET /api/v1/timers/{queue}/{key}` reads it.
const PEEK: &str = "\
SELECT t.partition, t.payload, t.txn, t.message_id, t.deliver_at, t.attempts
  FROM queen.timers t
 WHERE t.tenant = $1 AND t.queue = $2 AND t.timer_key = $3";

/// A keyset page of a queue's pending timers in key (byte) order, one row more than asked
/// to tell whether the page is the last.
const LIST: &str = "\
SELECT t.timer_key::text, t.partition, t.txn, t.message_id, t.deliver_at, t.attempts
  FROM queen.timers t
 WHERE t.tenant = $1 AND t.queue = $2 AND t.timer_key > $3
 ORDER BY t.timer_key
 LIMIT $4";

/// Runs the batch for `tenant` and answers the function's jsonb as JSON text:
/// `{"results": [...]}`, index-aligned.
#[instrument(skip_all, fields(db.system = "postgresql", db.operation = "timers_apply_v1"))]
pub async fn apply(
    conn: &mut PgConn,
    tenant: &str,
    batch: &TimerBatch,
) -> Result<String, KvApplyError> {
    call_json(conn, "timers_apply_v1", APPLY, tenant, &batch.to_sql_json()).await
}

fn iso(at: DateTime<Utc>) -> String {
    at.format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string()
}

/// The fields every read row shows.
fn row_fields(queue: &str, key: &str, row: &Row, first: usize) -> serde_json::Map<String, Value> {
    let mut fields = serde_json::Map::new();
    fields.insert("queue".into(), json!(queue));
    fields.insert("timerKey".into(), json!(key));
    fields.insert("partition".into(), json!(row.get::<_, String>(first)));
    fields.insert("txn".into(), json!(row.get::<_, String>(first + 1)));
    fields.insert("messageId".into(), json!(row.get::<_, Uuid>(first + 2)));
    fields.insert("deliverAt".into(), json!(iso(row.get(first + 3))));
    fields.insert("attempts".into(), json!(row.get::<_, i32>(first + 4)));
    fields
}

/// One key: `{found: true, ...the row, payload (base64 of the stored bytes), encrypted}`
/// or `{found: false}`.
#[instrument(skip_all, fields(db.system = "postgresql", db.operation = "timers_peek"))]
pub async fn peek(
    conn: &mut PgConn,
    tenant: &str,
    queue: &str,
    key: &str,
) -> Result<Value, DbError> {
    let st = conn.statement("timers_peek", PEEK).await?;
    let row = conn
        .client()
        .query_opt(&st, &[&tenant, &queue, &key])
        .await
        .map_err(|e| conn.note(DbError::query("timers_peek", e)))?;
    let Some(row) = row else {
        return Ok(json!({"found": false, "queue": queue, "timerKey": key}));
    };
    let payload: Vec<u8> = row.get(1);
    let mut fields = serde_json::Map::new();
    fields.insert("found".into(), json!(true));
    fields.insert("queue".into(), json!(queue));
    fields.insert("timerKey".into(), json!(key));
    fields.insert("partition".into(), json!(row.get::<_, String>(0)));
    fields.insert(
        "payload".into(),
        json!(base64::engine::general_purpose::STANDARD.encode(payload)),
    );
    fields.insert("encrypted".into(), json!(false));
    fields.insert("txn".into(), json!(row.get::<_, String>(2)));
    fields.insert("messageId".into(), json!(row.get::<_, Uuid>(3)));
    fields.insert("deliverAt".into(), json!(iso(row.get(4))));
    fields.insert("attempts".into(), json!(row.get::<_, i32>(5)));
    Ok(Value::Object(fields))
}

/// A page of `queue`'s pending timers after `after` (exclusive; "" from the start):
/// `{rows, truncated, nextAfter}`.
#[instrument(skip_all, fields(db.system = "postgresql", db.operation = "timers_list"))]
pub async fn list(
    conn: &mut PgConn,
    tenant: &str,
    queue: &str,
    after: &str,
    limit: i64,
) -> Result<Value, DbError> {
    let st = conn.statement("timers_list", LIST).await?;
    let rows = conn
        .client()
        .query(&st, &[&tenant, &queue, &after, &(limit + 1)])
        .await
        .map_err(|e| conn.note(DbError::query("timers_list", e)))?;
    let truncated = rows.len() as i64 > limit;
    let page: Vec<Value> = rows
        .iter()
        .take(limit as usize)
        .map(|row| {
            let key: String = row.get(0);
            Value::Object(row_fields(queue, &key, row, 1))
        })
        .collect();
    let next_after = if truncated {
        page.last()
            .map(|r| r["timerKey"].clone())
            .unwrap_or(Value::Null)
    } else {
        Value::Null
    };
    Ok(json!({"rows": page, "truncated": truncated, "nextAfter": next_after}))
}

/// A timer the fire loop claimed (deleted inside its transaction) and is pushing.
#[derive(Debug, Clone)]
pub struct ClaimedTimer {
    /// The tenant that scheduled it.
    pub tenant: String,
    /// The destination queue.
    pub queue: String,
    /// The timer's key.
    pub key: String,
    /// The destination partition.
    pub partition: String,
    /// The message's bytes.
    pub payload: Vec<u8>,
    /// The message's `transactionId`.
    pub txn: String,
    /// The promised message id.
    pub message_id: Uuid,
    /// How long after `deliverAt` the claim ran, in milliseconds.
    pub late_ms: f64,
    /// Failed fires before this one.
    pub attempts: i32,
}

impl ClaimedTimer {
    /// Reads one row of `timers_claim_v1`.
    pub(super) fn from_row(row: &Row) -> Self {
        ClaimedTimer {
            tenant: row.get(0),
            queue: row.get(1),
            key: row.get(2),
            partition: row.get(3),
            payload: row.get(4),
            txn: row.get(5),
            message_id: row.get(6),
            late_ms: row.get(7),
            attempts: row.get(8),
        }
    }
}

/// Moves the due time of `timers` (a fire of theirs could not push) by their backoff;
/// answers how many still held the same message id.
pub async fn backoff(conn: &mut PgConn, timers: &[ClaimedTimer]) -> Result<i32, DbError> {
    let st = conn.statement("timers_backoff_v1", BACKOFF).await?;
    let tenants: Vec<&str> = timers.iter().map(|t| t.tenant.as_str()).collect();
    let queues: Vec<&str> = timers.iter().map(|t| t.queue.as_str()).collect();
    let keys: Vec<&str> = timers.iter().map(|t| t.key.as_str()).collect();
    let ids: Vec<Uuid> = timers.iter().map(|t| t.message_id).collect();
    let row = conn
        .client()
        .query_one(&st, &[&tenants, &queues, &keys, &ids])
        .await
        .map_err(|e| conn.note(DbError::query("timers_backoff_v1", e)))?;
    Ok(row.get(0))
}

/// Milliseconds from PostgreSQL's now to the earliest due timer (negative: one is due),
/// `None` when none is pending.
pub async fn next_due_ms(conn: &mut PgConn) -> Result<Option<f64>, DbError> {
    let st = conn.statement("timers_next_due_v1", NEXT_DUE).await?;
    let row = conn
        .client()
        .query_one(&st, &[])
        .await
        .map_err(|e| conn.note(DbError::query("timers_next_due_v1", e)))?;
    Ok(row.get(0))
}

/// Pending timers of every tenant.
pub async fn pending(conn: &mut PgConn) -> Result<i64, DbError> {
    let st = conn.statement("timers_pending_v1", PENDING).await?;
    let row = conn
        .client()
        .query_one(&st, &[])
        .await
        .map_err(|e| conn.note(DbError::query("timers_pending_v1", e)))?;
    Ok(row.get(0))
}
