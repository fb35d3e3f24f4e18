//! The admin (tier 2) endpoints' SQL: one wrapper per `queen.*_v1` function of `sql/functions/`
//! onwards, grouped by route family. Dashboard-shaped answers come back from SQL as one
//! `jsonb` document (PostgreSQL builds them from the tables); rows that carry segment blobs
//! come back as typed rows, because only the broker opens blobs.

pub mod dlq;
pub mod groups;
pub mod messages;
pub mod resources;
pub mod status;
pub mod traces;

use serde_json::Value;
use tokio_postgres::types::ToSql;

use super::{DbError, PgConn};

/// Runs a statement answering one `jsonb` value (NULL becomes `None`).
pub(crate) async fn json_call(
    conn: &mut PgConn,
    op: &'static str,
    sql: &'static str,
    params: &[&(dyn ToSql + Sync)],
) -> Result<Option<Value>, DbError> {
    let st = conn.statement(op, sql).await?;
    let row = conn.client().query_one(&st, params).await;
    let row = row.map_err(|e| conn.note(DbError::query(op, e)))?;
    Ok(row.get(0))
}
