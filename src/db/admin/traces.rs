//! Traces: the wrappers of `queen.trace_add_v1`, `queen.traces_for_message_v1`,
//! `queen.traces_by_name_v1` and `queen.trace_names_v1`.

use chrono::{DateTime, Utc};
use serde_json::Value;
use tokio_postgres::types::ToSql;
use tracing::instrument;

use super::json_call;
use crate::db::{DbError, PgConn};

/// One event to record.
pub struct NewTrace<'a> {
    /// The message's partition.
    pub partition_id: i64,
    /// The message's transaction id.
    pub transaction_id: &'a str,
    /// The group that recorded it.
    pub consumer_group: &'a str,
    /// Names to file it under.
    pub names: &'a [String],
    /// Event type (`info` by default).
    pub event_type: &'a str,
    /// The event's data (a JSON object).
    pub data: &'a Value,
    /// The worker that recorded it.
    pub worker_id: Option<&'a str>,
}

/// Stores an event; `None` when the partition is unknown (`queen.trace_add_v1`).
#[instrument(skip_all, fields(db.system = "postgresql", db.operation = "trace_add_v1"))]
pub async fn add(
    conn: &mut PgConn,
    tenant: &str,
    t: &NewTrace<'_>,
) -> Result<Option<i64>, DbError> {
    const OP: &str = "trace_add_v1";
    let st = conn
        .statement(
            OP,
            "SELECT queen.trace_add_v1($1, $2, $3, $4, $5, $6, $7, $8)",
        )
        .await?;
    let row = conn
        .client()
        .query_one(
            &st,
            &[
                &tenant,
                &t.partition_id,
                &t.transaction_id,
                &t.consumer_group,
                &t.names,
                &t.event_type,
                t.data,
                &t.worker_id,
            ],
        )
        .await;
    Ok(row.map_err(|e| conn.note(DbError::query(OP, e)))?.get(0))
}

/// A message's events, oldest first (`queen.traces_for_message_v1`).
#[instrument(skip_all, fields(db.system = "postgresql", db.operation = "traces_for_message_v1"))]
pub async fn for_message(
    conn: &mut PgConn,
    tenant: &str,
    partition_id: i64,
    transaction_id: &str,
) -> Result<Value, DbError> {
    let sql = "SELECT queen.traces_for_message_v1($1, $2, $3)";
    let params: [&(dyn ToSql + Sync); 3] = [&tenant, &partition_id, &transaction_id];
    Ok(json_call(conn, "traces_for_message_v1", sql, &params)
        .await?
        .unwrap_or(Value::Null))
}

/// A page of events filed under a name, newest first (`queen.traces_by_name_v1`).
#[instrument(skip_all, fields(db.system = "postgresql", db.operation = "traces_by_name_v1"))]
pub async fn by_name(
    conn: &mut PgConn,
    tenant: &str,
    name: &str,
    from: Option<DateTime<Utc>>,
    to: Option<DateTime<Utc>>,
    limit: i32,
    offset: i32,
) -> Result<Value, DbError> {
    let sql = "SELECT queen.traces_by_name_v1($1, $2, $3, $4, $5, $6)";
    let params: [&(dyn ToSql + Sync); 6] = [&tenant, &name, &from, &to, &limit, &offset];
    Ok(json_call(conn, "traces_by_name_v1", sql, &params)
        .await?
        .unwrap_or(Value::Null))
}

/// A page of trace names with their counts (`queen.trace_names_v1`).
#[instrument(skip_all, fields(db.system = "postgresql", db.operation = "trace_names_v1"))]
pub async fn names(
    conn: &mut PgConn,
    tenant: &str,
    search: Option<&str>,
    limit: i32,
    offset: i32,
) -> Result<Value, DbError> {
    let sql = "SELECT queen.trace_names_v1($1, $2, $3, $4)";
    let params: [&(dyn ToSql + Sync); 4] = [&tenant, &search, &limit, &offset];
    Ok(json_call(conn, "trace_names_v1", sql, &params)
        .await?
        .unwrap_or(Value::Null))
}
