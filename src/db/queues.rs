//! Queue configuration: the wrapper of `queen.configure_queue_v1`, and the health probe.

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

/// One round trip proving the database answers and the schema is there.
pub async fn ping(conn: &mut PgConn) -> Result<(), DbError> {
    let st = conn
        .statement("health", "SELECT count(*) FROM queen.schema_files")
        .await?;
    let result = conn.client().query_one(&st, &[]).await;
    result
        .map(|_| ())
        .map_err(|e| conn.note(DbError::query("health", e)))
}
