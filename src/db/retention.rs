//! The retention sweeper's SQL: the wrappers of `queen.sweeper_lease_v1`,
//! `queen.sweeper_release_v1`, `queen.retention_segments_v2`, `queen.retention_rows_v1` and
//! `queen.retention_idle_v1` (`sql/functions/retention_idle_v1.sql`) and
//! `queen.retention_kv_v1` (expired key/value rows), and the table sizes `/metrics` reports.
//!
//! Every batch runs in its own transaction that first takes or renews the sweeper lease,
//! so two nodes never run a batch at the same time; what to delete and when to pause is
//! decided by the caller (`crate::retention`).

use tokio_postgres::types::ToSql;
use tokio_postgres::{Row, Transaction};

use super::{DbError, PgConn};

/// What one batch of segment retention deleted from one partition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SegmentsRemoved {
    /// The queue's tenant.
    pub tenant: String,
    /// The queue.
    pub queue: String,
    /// Segments deleted.
    pub segments: i64,
    /// Stored bytes of those segments.
    pub bytes: i64,
    /// Legacy `queen.dedup` rows of their offsets.
    pub dedup_rows: i64,
}

/// The answer of one segment batch.
#[derive(Debug, Clone, Default)]
pub struct SegmentBatch {
    /// Per partition deleted from.
    pub removed: Vec<SegmentsRemoved>,
    /// Where the next batch starts (`None`: this pass is complete).
    pub resume_after: Option<i64>,
}

/// Counts of one batch of row expiry or idle clean-up.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RowsRemoved {
    /// Dead letters (row expiry) or partitions (idle clean-up).
    pub first: i64,
    /// Traces (row expiry) or cursors (idle clean-up).
    pub second: i64,
}

impl RowsRemoved {
    /// The two counts of a `retention_rows_v1` or `retention_idle_v1` row.
    fn from_row(row: &Row) -> Self {
        RowsRemoved {
            first: row.get(0),
            second: row.get(1),
        }
    }
}

/// Retention settings a batch needs, as the SQL functions take them.
#[derive(Debug, Clone, Copy)]
pub struct Budget {
    /// Rows (segments, dead letters, ...) per batch at most.
    pub batch: i32,
    /// How long the lease lasts without renewal, ms.
    pub lease_ms: i32,
}

/// One batch of segment retention (`queen.retention_segments_v2`), under the lease;
/// `None` when another node holds it.
#[tracing::instrument(skip_all, fields(db.system = "postgresql", db.operation = "retention_segments_v2"))]
pub async fn segments(
    conn: &mut PgConn,
    holder: &str,
    budget: Budget,
    after: Option<i64>,
    default_secs: i32,
    default_completed_secs: i32,
    default_dedup_secs: i32,
) -> Result<Option<SegmentBatch>, DbError> {
    let op = "retention_segments_v2";
    let result = async {
        let tx = conn.client().transaction().await?;
        if !leased(&tx, holder, budget.lease_ms).await? {
            return Ok(None);
        }
        let rows = tx
            .query(
                "SELECT tenant, queue, segments, bytes, dedup_rows, resume_after
                 FROM queen.retention_segments_v2($1, $2, $3, $4, $5)",
                &[
                    &after,
                    &budget.batch,
                    &default_secs,
                    &default_completed_secs,
                    &default_dedup_secs,
                ],
            )
            .await?;
        tx.commit().await?;
        let mut batch = SegmentBatch::default();
        for row in rows {
            match row.get::<_, Option<String>>(1) {
                Some(queue) => batch.removed.push(SegmentsRemoved {
                    tenant: row.get::<_, Option<String>>(0).unwrap_or_default(),
                    queue,
                    segments: row.get(2),
                    bytes: row.get(3),
                    dedup_rows: row.get(4),
                }),
                None => batch.resume_after = row.get(5),
            }
        }
        Ok(Some(batch))
    }
    .await;
    result.map_err(|e| conn.note(DbError::query(op, e)))
}

/// One batch of dead-letter and trace expiry (`queen.retention_rows_v1`), under the lease.
#[tracing::instrument(skip_all, fields(db.system = "postgresql", db.operation = "retention_rows_v1"))]
pub async fn rows(
    conn: &mut PgConn,
    holder: &str,
    budget: Budget,
    dead_letter_secs: i32,
    trace_secs: i32,
) -> Result<Option<RowsRemoved>, DbError> {
    let row = under_lease(
        conn,
        holder,
        budget.lease_ms,
        "retention_rows_v1",
        "SELECT dead_letters, traces FROM queen.retention_rows_v1($1, $2, $3)",
        &[&budget.batch, &dead_letter_secs, &trace_secs],
    )
    .await?;
    Ok(row.as_ref().map(RowsRemoved::from_row))
}

/// One batch of idle clean-up (`queen.retention_idle_v1`): empty partitions and abandoned
/// groups' cursors, under the lease.
#[tracing::instrument(skip_all, fields(db.system = "postgresql", db.operation = "retention_idle_v1"))]
pub async fn idle(
    conn: &mut PgConn,
    holder: &str,
    budget: Budget,
    empty_partition_secs: i32,
    idle_group_secs: i32,
) -> Result<Option<RowsRemoved>, DbError> {
    let row = under_lease(
        conn,
        holder,
        budget.lease_ms,
        "retention_idle_v1",
        "SELECT partitions, cursors FROM queen.retention_idle_v1($1, $2, $3)",
        &[&budget.batch, &empty_partition_secs, &idle_group_secs],
    )
    .await?;
    Ok(row.as_ref().map(RowsRemoved::from_row))
}

/// One batch of key/value expiry (`queen.retention_kv_v1`): at most `budget.batch` rows
/// past their expiry removed, under the lease; `None` when another node holds it.
#[tracing::instrument(skip_all, fields(db.system = "postgresql", db.operation = "retention_kv_v1"))]
pub async fn kv(conn: &mut PgConn, holder: &str, budget: Budget) -> Result<Option<i64>, DbError> {
    let row = under_lease(
        conn,
        holder,
        budget.lease_ms,
        "retention_kv_v1",
        "SELECT queen.retention_kv_v1($1)",
        &[&budget.batch],
    )
    .await?;
    Ok(row.map(|row| row.get(0)))
}

/// Hands the lease over at once (`queen.sweeper_release_v1`), when this node stops.
pub async fn release(conn: &mut PgConn, holder: &str) -> Result<(), DbError> {
    let result = conn
        .client()
        .execute("SELECT queen.sweeper_release_v1($1)", &[&holder])
        .await;
    result
        .map(|_| ())
        .map_err(|e| conn.note(DbError::query("sweeper_release_v1", e)))
}

/// Total bytes (heap, indexes, TOAST) of every table of schema `queen`, largest first.
pub async fn table_sizes(conn: &mut PgConn) -> Result<Vec<(String, i64)>, DbError> {
    let st = conn
        .statement(
            "table_sizes",
            "SELECT c.relname::text, pg_total_relation_size(c.oid)
             FROM pg_class c
             WHERE c.relnamespace = 'queen'::regnamespace AND c.relkind = 'r'
             ORDER BY 2 DESC, 1",
        )
        .await?;
    let rows = conn.client().query(&st, &[]).await;
    Ok(rows
        .map_err(|e| conn.note(DbError::query("table_sizes", e)))?
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect())
}

async fn leased(
    tx: &Transaction<'_>,
    holder: &str,
    lease_ms: i32,
) -> Result<bool, tokio_postgres::Error> {
    Ok(tx
        .query_one(
            "SELECT queen.sweeper_lease_v1($1, $2)",
            &[&holder, &lease_ms],
        )
        .await?
        .get(0))
}

/// Runs `sql`, whose answer is one row, in a transaction that first takes or renews the
/// sweeper lease: the row, or `None` when another node holds the lease.
async fn under_lease(
    conn: &mut PgConn,
    holder: &str,
    lease_ms: i32,
    op: &'static str,
    sql: &str,
    args: &[&(dyn ToSql + Sync)],
) -> Result<Option<Row>, DbError> {
    let distributed = conn.distributed();
    let result = async {
        let tx = conn.client().transaction().await?;
        if distributed {
            // On the Citus layout a batch deletes from distributed tables and then from the
            // coordinator's trace table, whose foreign key to a reference table makes
            // Citus refuse that after a parallel multi-shard statement of the same
            // transaction ("cannot modify table ... because there was a parallel
            // operation on a distributed table"): one connection per worker instead.
            tx.batch_execute("SET LOCAL citus.multi_shard_modify_mode TO 'sequential'")
                .await?;
        }
        if !leased(&tx, holder, lease_ms).await? {
            return Ok(None);
        }
        let row = tx.query_one(sql, args).await?;
        tx.commit().await?;
        Ok(Some(row))
    }
    .await;
    result.map_err(|e| conn.note(DbError::query(op, e)))
}
