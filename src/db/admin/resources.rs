//! Resources: the wrappers of `queen.resources_overview_v1`, `queen.resources_queues_v1`,
//! `queen.resource_queue_v1`, `queen.queue_depth_v1`, `queen.resources_partitions_v1`,
//! `queen.resources_grouped_v1`, `queen.resources_kv_v1`,
//! `queen.resources_kv_keys_v1` and `queen.queue_delete_v1`.

use serde_json::Value;
use tracing::instrument;

use super::json_call;
use crate::db::{DbError, PgConn};

/// The tenant's totals (`queen.resources_overview_v1`).
#[instrument(skip_all, fields(db.system = "postgresql", db.operation = "resources_overview_v1"))]
pub async fn overview(conn: &mut PgConn, tenant: &str) -> Result<Value, DbError> {
    let sql = "SELECT queen.resources_overview_v1($1)";
    let v = json_call(conn, "resources_overview_v1", sql, &[&tenant]).await?;
    Ok(v.unwrap_or(Value::Null))
}

/// A page of queues with their message counts (`queen.resources_queues_v1`).
#[instrument(skip_all, fields(db.system = "postgresql", db.operation = "resources_queues_v1"))]
pub async fn queues(
    conn: &mut PgConn,
    tenant: &str,
    search: Option<&str>,
    limit: i32,
    offset: i32,
) -> Result<Value, DbError> {
    let sql = "SELECT queen.resources_queues_v1($1, $2, $3, $4)";
    let params: [&(dyn tokio_postgres::types::ToSql + Sync); 4] =
        [&tenant, &search, &limit, &offset];
    let v = json_call(conn, "resources_queues_v1", sql, &params).await?;
    Ok(v.unwrap_or(Value::Null))
}

/// One queue with its partitions, `None` when unknown (`queen.resource_queue_v1`).
#[instrument(skip_all, fields(db.system = "postgresql", db.operation = "resource_queue_v1"))]
pub async fn queue(conn: &mut PgConn, tenant: &str, queue: &str) -> Result<Option<Value>, DbError> {
    let sql = "SELECT queen.resource_queue_v1($1, $2)";
    json_call(conn, "resource_queue_v1", sql, &[&tenant, &queue]).await
}

/// A queue's pending messages for a group or the worst cursor, `None` when unknown
/// (`queen.queue_depth_v1`).
#[instrument(skip_all, fields(db.system = "postgresql", db.operation = "queue_depth_v1"))]
pub async fn depth(
    conn: &mut PgConn,
    tenant: &str,
    queue: &str,
    group: Option<&str>,
) -> Result<Option<Value>, DbError> {
    let sql = "SELECT queen.queue_depth_v1($1, $2, $3)";
    json_call(conn, "queue_depth_v1", sql, &[&tenant, &queue, &group]).await
}

/// A page of partitions with their cursors (`queen.resources_partitions_v1`).
#[instrument(skip_all, fields(db.system = "postgresql", db.operation = "resources_partitions_v1"))]
pub async fn partitions(
    conn: &mut PgConn,
    tenant: &str,
    queue: Option<&str>,
    limit: i32,
    offset: i32,
) -> Result<Value, DbError> {
    let sql = "SELECT queen.resources_partitions_v1($1, $2, $3, $4)";
    let params: [&(dyn tokio_postgres::types::ToSql + Sync); 4] =
        [&tenant, &queue, &limit, &offset];
    let v = json_call(conn, "resources_partitions_v1", sql, &params).await?;
    Ok(v.unwrap_or(Value::Null))
}

/// Queues grouped by namespace (`queen.resources_grouped_v1` by `namespace`).
#[instrument(skip_all, fields(db.system = "postgresql", db.operation = "resources_grouped_v1"))]
pub async fn namespaces(conn: &mut PgConn, tenant: &str) -> Result<Value, DbError> {
    grouped(conn, tenant, "namespace").await
}

/// Queues grouped by task (`queen.resources_grouped_v1` by `task`).
#[instrument(skip_all, fields(db.system = "postgresql", db.operation = "resources_grouped_v1"))]
pub async fn tasks(conn: &mut PgConn, tenant: &str) -> Result<Value, DbError> {
    grouped(conn, tenant, "task").await
}

/// `queen.resources_grouped_v1`: the tenant's queues grouped by `by`.
async fn grouped(conn: &mut PgConn, tenant: &str, by: &str) -> Result<Value, DbError> {
    let sql = "SELECT queen.resources_grouped_v1($1, $2)";
    let v = json_call(conn, "resources_grouped_v1", sql, &[&tenant, &by]).await?;
    Ok(v.unwrap_or(Value::Null))
}

/// Deletes a queue and everything stored for it, dedup rows included; true when it
/// existed (`queen.queue_delete_v1`). The delete locks the queue's partitions in id order
/// while a combined push locks them in name order, so under pushes PostgreSQL can find a
/// deadlock and cancel the delete: it is then tried again (at most [`DELETE_ATTEMPTS`]
/// times), as it changed nothing.
#[instrument(skip_all, fields(db.system = "postgresql", db.operation = "queue_delete_v1"))]
pub async fn delete_queue(conn: &mut PgConn, tenant: &str, queue: &str) -> Result<bool, DbError> {
    const OP: &str = "queue_delete_v1";
    let st = conn
        .statement(OP, "SELECT queen.queue_delete_v1($1, $2)")
        .await?;
    let distributed = conn.distributed();
    let mut attempt = 1;
    loop {
        let row = async {
            let tx = conn.client().transaction().await?;
            if distributed {
                // On the Citus layout the function reads the queue's partitions over
                // every shard and then deletes reference rows (the queue, the directory),
                // which Citus refuses after a parallel multi-shard access of the same
                // transaction: one connection per worker instead.
                tx.batch_execute("SET LOCAL citus.multi_shard_modify_mode TO 'sequential'")
                    .await?;
            }
            let row = tx.query_one(&st, &[&tenant, &queue]).await?;
            tx.commit().await?;
            Ok(row)
        }
        .await;
        match row.map_err(|e| DbError::query(OP, e)) {
            Ok(row) => return Ok(row.get(0)),
            Err(e) if e.is_retryable() && attempt < DELETE_ATTEMPTS => attempt += 1,
            Err(e) => return Err(conn.note(e)),
        }
    }
}

/// How many times a queue delete cancelled by a deadlock is run in all.
pub const DELETE_ATTEMPTS: u32 = 5;

/// The tenant's KV namespaces with their live key counts (`queen.resources_kv_v1`).
#[instrument(skip_all, fields(db.system = "postgresql", db.operation = "resources_kv_v1"))]
pub async fn kv_namespaces(conn: &mut PgConn, tenant: &str) -> Result<Value, DbError> {
    let sql = "SELECT queen.resources_kv_v1($1)";
    let v = json_call(conn, "resources_kv_v1", sql, &[&tenant]).await?;
    Ok(v.unwrap_or(Value::Null))
}

/// One page of a namespace's live keys (`queen.resources_kv_keys_v1`).
#[instrument(skip_all, fields(db.system = "postgresql", db.operation = "resources_kv_keys_v1"))]
pub async fn kv_keys(
    conn: &mut PgConn,
    tenant: &str,
    namespace: &str,
    prefix: &str,
    after: Option<&str>,
    limit: i32,
) -> Result<Value, DbError> {
    let sql = "SELECT queen.resources_kv_keys_v1($1, $2, $3, $4, $5)";
    let params: [&(dyn tokio_postgres::types::ToSql + Sync); 5] =
        [&tenant, &namespace, &prefix, &after, &limit];
    let v = json_call(conn, "resources_kv_keys_v1", sql, &params).await?;
    Ok(v.unwrap_or(Value::Null))
}
