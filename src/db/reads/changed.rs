//! The wrappers of `queen.partitions_safe_time_v1` and `queen.partitions_changed_v1`:
//! partition discovery's watermark and one page.

use chrono::{DateTime, Utc};
use tracing::instrument;

use crate::db::{DbError, PgConn};

/// One listed partition.
#[derive(Debug, Clone)]
pub struct ChangedPartition {
    /// Partition id.
    pub id: i64,
    /// Partition name.
    pub name: String,
    /// The newest message's offset, -1 when none.
    pub last_offset: i64,
    /// The first offset retention kept.
    pub log_start: i64,
    /// When it was last pushed to (whole seconds).
    pub last_write_at: DateTime<Utc>,
}

/// What a page asks.
#[derive(Debug, Clone, Copy)]
pub struct PageAsk<'a> {
    /// Queue name.
    pub queue: &'a str,
    /// Partitions written at or after this time only (`None`: every partition).
    pub since: Option<DateTime<Utc>>,
    /// Partitions named after this only (`None`: from the first).
    pub after: Option<&'a str>,
    /// Most partitions the page holds.
    pub limit: i32,
}

/// A page: `None` when the tenant has no such queue.
pub type Page = Option<Vec<ChangedPartition>>;

/// The time below which every write is already visible to a read started after this
/// call (`queen.partitions_safe_time_v1`, whose header holds the argument). Run on a
/// connection outside any transaction, before the pages it covers.
#[instrument(skip_all, fields(db.system = "postgresql", db.operation = "partitions_safe_time_v1"))]
pub async fn safe_time(conn: &mut PgConn) -> Result<DateTime<Utc>, DbError> {
    const OP: &str = "partitions_safe_time_v1";
    let st = conn
        .statement(OP, "SELECT queen.partitions_safe_time_v1()")
        .await?;
    let row = conn.client().query_one(&st, &[]).await;
    let row = row.map_err(|e| conn.note(DbError::query(OP, e)))?;
    Ok(row.get(0))
}

/// One page of the tenant's queue's partitions, by name, at most `ask.limit + 1` of them
/// (the extra one tells that another page follows) (`queen.partitions_changed_v1`).
#[instrument(skip_all, fields(db.system = "postgresql", db.operation = "partitions_changed_v1"))]
pub async fn page(conn: &mut PgConn, tenant: &str, ask: &PageAsk<'_>) -> Result<Page, DbError> {
    const OP: &str = "partitions_changed_v1";
    let st = conn
        .statement(
            OP,
            "SELECT partition_id, partition_name, last_offset, log_start, last_write_at \
             FROM queen.partitions_changed_v1($1, $2, $3, $4, $5)",
        )
        .await?;
    let rows = conn
        .client()
        .query(
            &st,
            &[&tenant, &ask.queue, &ask.since, &ask.after, &ask.limit],
        )
        .await;
    let rows = rows.map_err(|e| conn.note(DbError::query(OP, e)))?;
    if rows.is_empty() {
        return Ok(None);
    }
    Ok(Some(
        rows.iter()
            .filter_map(|r| {
                let id: Option<i64> = r.get(0);
                Some(ChangedPartition {
                    id: id?,
                    name: r.get(1),
                    last_offset: r.get(2),
                    log_start: r.get(3),
                    last_write_at: r.get(4),
                })
            })
            .collect(),
    ))
}
