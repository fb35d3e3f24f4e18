//! Queue configuration: the wrapper of `queen.configure_queue_v1`, the stored row a
//! configure compares with, the queue's encryption switch, and the health probe.

use serde_json::Value;

use super::{DbError, PgConn};

const CONFIGURE: &str =
    "SELECT queue_id, partition_id, effective FROM queen.configure_queue_v1($1, $2, $3, $4, $5)";

/// The stored result of a configure.
#[derive(Debug, Clone)]
pub struct ConfiguredQueue {
    /// The queue row's id.
    pub queue_id: i64,
    /// The id of its `Default` partition.
    pub partition_id: i64,
    /// The effective stored row (column names), as JSON.
    pub effective: Value,
}

/// Creates or updates a queue's configuration (`options` holds column-named keys).
#[tracing::instrument(skip_all, fields(db.system = "postgresql", db.operation = "configure_queue_v1"))]
pub async fn configure(
    conn: &mut PgConn,
    tenant: &str,
    queue: &str,
    namespace: Option<&str>,
    task: Option<&str>,
    options: &Value,
) -> Result<ConfiguredQueue, DbError> {
    let st = conn.statement("configure_queue_v1", CONFIGURE).await?;
    let row = conn
        .client()
        .query_one(&st, &[&tenant, &queue, &namespace, &task, options])
        .await
        .map_err(|e| DbError::query("configure_queue_v1", e));
    let row = row.map_err(|e| conn.note(e))?;
    Ok(ConfiguredQueue {
        queue_id: row.get(0),
        partition_id: row.get(1),
        effective: row.get(2),
    })
}

const STORED: &str = "SELECT to_jsonb(q) FROM queen.queues q WHERE q.tenant = $1 AND q.name = $2";

/// A queue's stored row (column names) as JSON, or `None` when the queue does not exist:
/// what a configure compares its requested options with before it needs `admin`.
#[tracing::instrument(skip_all, fields(db.system = "postgresql", db.operation = "queue_row"))]
pub async fn stored_row(
    conn: &mut PgConn,
    tenant: &str,
    queue: &str,
) -> Result<Option<Value>, DbError> {
    let st = conn.statement("queue_row", STORED).await?;
    let row = conn
        .client()
        .query_opt(&st, &[&tenant, &queue])
        .await
        .map_err(|e| DbError::query("queue_row", e));
    let row = row.map_err(|e| conn.note(e))?;
    Ok(row.map(|r| r.get(0)))
}

const ENCRYPTION: &str =
    "SELECT q.encryption_enabled FROM queen.queues q WHERE q.tenant = $1 AND q.name = $2";

/// Whether a queue seals its payloads at rest (false for a queue that does not exist).
pub async fn encryption_enabled(
    conn: &mut PgConn,
    tenant: &str,
    queue: &str,
) -> Result<bool, DbError> {
    let st = conn.statement("queue_encryption", ENCRYPTION).await?;
    let row = conn
        .client()
        .query_opt(&st, &[&tenant, &queue])
        .await
        .map_err(|e| DbError::query("queue_encryption", e));
    let row = row.map_err(|e| conn.note(e))?;
    Ok(row.is_some_and(|r| r.get(0)))
}

/// One round trip proving the database answers and the schema is there.
pub async fn ping(conn: &mut PgConn) -> Result<(), DbError> {
    let st = conn
        .statement("health", "SELECT count(*) FROM queen.schema_versions")
        .await?;
    let result = conn.client().query_one(&st, &[]).await;
    result
        .map(|_| ())
        .map_err(|e| conn.note(DbError::query("health", e)))
}
