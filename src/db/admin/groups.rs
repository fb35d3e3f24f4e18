//! Consumer groups: the wrappers of `queen.consumer_groups_v1`,
//! `queen.consumer_groups_lagging_v1`, `queen.consumer_group_detail_v1`,
//! `queen.consumer_group_delete_v1`, `queen.consumer_group_subscription_v1` and
//! `queen.consumer_group_seek_v1`.

use chrono::{DateTime, Utc};
use serde_json::Value;
use tracing::instrument;

use super::json_call;
use crate::db::{DbError, PgConn};

/// Every (group, queue) of the tenant with its lag (`queen.consumer_groups_v1`).
#[instrument(skip_all, fields(db.system = "postgresql", db.operation = "consumer_groups_v1"))]
pub async fn list(conn: &mut PgConn, tenant: &str) -> Result<Value, DbError> {
    let v = json_call(
        conn,
        "consumer_groups_v1",
        "SELECT queen.consumer_groups_v1($1)",
        &[&tenant],
    )
    .await?;
    Ok(v.unwrap_or_else(|| Value::Array(Vec::new())))
}

/// Partitions whose oldest unconsumed message is at least `min_lag_seconds` old
/// (`queen.consumer_groups_lagging_v1`).
#[instrument(skip_all, fields(db.system = "postgresql", db.operation = "consumer_groups_lagging_v1"))]
pub async fn lagging(
    conn: &mut PgConn,
    tenant: &str,
    min_lag_seconds: f64,
) -> Result<Value, DbError> {
    let v = json_call(
        conn,
        "consumer_groups_lagging_v1",
        "SELECT queen.consumer_groups_lagging_v1($1, $2)",
        &[&tenant, &min_lag_seconds],
    )
    .await?;
    Ok(v.unwrap_or_else(|| Value::Array(Vec::new())))
}

/// One group's partitions keyed by queue, `None` when the group is unknown
/// (`queen.consumer_group_detail_v1`).
#[instrument(skip_all, fields(db.system = "postgresql", db.operation = "consumer_group_detail_v1"))]
pub async fn detail(
    conn: &mut PgConn,
    tenant: &str,
    group: &str,
) -> Result<Option<Value>, DbError> {
    json_call(
        conn,
        "consumer_group_detail_v1",
        "SELECT queen.consumer_group_detail_v1($1, $2)",
        &[&tenant, &group],
    )
    .await
}

/// What a group delete removed.
#[derive(Debug, Clone)]
pub struct Deleted {
    /// Cursor rows deleted.
    pub partitions: i32,
    /// Durable subscriptions deleted.
    pub metadata: i32,
    /// Names of the queues touched.
    pub queues: Vec<String>,
}

/// Deletes a group's cursors (on one queue or all) and optionally its subscriptions
/// (`queen.consumer_group_delete_v1`).
#[instrument(skip_all, fields(db.system = "postgresql", db.operation = "consumer_group_delete_v1"))]
pub async fn delete(
    conn: &mut PgConn,
    tenant: &str,
    group: &str,
    queue: Option<&str>,
    delete_metadata: bool,
) -> Result<Deleted, DbError> {
    const OP: &str = "consumer_group_delete_v1";
    let st = conn
        .statement(
            OP,
            "SELECT deleted_partitions, metadata_deleted, queues \
             FROM queen.consumer_group_delete_v1($1, $2, $3, $4)",
        )
        .await?;
    let distributed = conn.distributed();
    let row = async {
        let tx = conn.client().transaction().await?;
        if distributed {
            // On the Citus layout the function deletes the group's cursors over every
            // shard and then its subscriptions, a reference table, which Citus refuses
            // after a parallel multi-shard statement of the same transaction: one
            // connection per worker instead.
            tx.batch_execute("SET LOCAL citus.multi_shard_modify_mode TO 'sequential'")
                .await?;
        }
        let row = tx
            .query_one(&st, &[&tenant, &group, &queue, &delete_metadata])
            .await?;
        tx.commit().await?;
        Ok(row)
    }
    .await;
    let row = row.map_err(|e| conn.note(DbError::query(OP, e)))?;
    Ok(Deleted {
        partitions: row.get(0),
        metadata: row.get(1),
        queues: row.get(2),
    })
}

/// Moves every durable subscription of a group to a timestamp; returns how many
/// (`queen.consumer_group_subscription_v1`).
#[instrument(skip_all, fields(db.system = "postgresql", db.operation = "consumer_group_subscription_v1"))]
pub async fn set_subscription(
    conn: &mut PgConn,
    tenant: &str,
    group: &str,
    timestamp: DateTime<Utc>,
) -> Result<i32, DbError> {
    const OP: &str = "consumer_group_subscription_v1";
    let st = conn
        .statement(
            OP,
            "SELECT queen.consumer_group_subscription_v1($1, $2, $3)",
        )
        .await?;
    let row = conn
        .client()
        .query_one(&st, &[&tenant, &group, &timestamp])
        .await;
    Ok(row.map_err(|e| conn.note(DbError::query(OP, e)))?.get(0))
}

/// One partition a seek moved.
#[derive(Debug, Clone)]
pub struct Moved {
    /// Partition id.
    pub partition_id: i64,
    /// Partition name.
    pub partition: String,
    /// Its newest offset.
    pub last_offset: i64,
    /// The group's cursor now.
    pub committed: i64,
}

/// The outcome of a seek.
#[derive(Debug, Clone)]
pub enum Seek {
    /// The queue does not exist.
    NoQueue,
    /// A live lease of the group holds a partition: nothing changed.
    Leased,
    /// The cursors moved.
    Moved(Vec<Moved>),
}

/// Moves a group's cursors on a queue to the end (`timestamp` None) or to the first segment
/// at or after `timestamp` (`queen.consumer_group_seek_v1`).
#[instrument(skip_all, fields(db.system = "postgresql", db.operation = "consumer_group_seek_v1"))]
pub async fn seek(
    conn: &mut PgConn,
    tenant: &str,
    group: &str,
    queue: &str,
    timestamp: Option<DateTime<Utc>>,
) -> Result<Seek, DbError> {
    const OP: &str = "consumer_group_seek_v1";
    let st = conn
        .statement(
            OP,
            "SELECT refused, partition_id, partition_name, last_offset, committed \
             FROM queen.consumer_group_seek_v1($1, $2, $3, $4)",
        )
        .await?;
    let distributed = conn.distributed();
    let rows = async {
        let tx = conn.client().transaction().await?;
        if distributed {
            // The function writes the subscription (a reference table) after reading
            // the queue's partitions over every shard, which Citus refuses in parallel
            // mode: one connection per worker instead.
            tx.batch_execute("SET LOCAL citus.multi_shard_modify_mode TO 'sequential'")
                .await?;
        }
        let rows = tx
            .query(&st, &[&tenant, &group, &queue, &timestamp])
            .await?;
        tx.commit().await?;
        Ok(rows)
    }
    .await;
    let rows = rows.map_err(|e| conn.note(DbError::query(OP, e)))?;
    if rows.is_empty() {
        return Ok(Seek::NoQueue);
    }
    if rows[0].get::<_, bool>(0) {
        return Ok(Seek::Leased);
    }
    Ok(Seek::Moved(
        rows.iter()
            // The row of NULLs of a queue without partitions.
            .filter(|r| r.get::<_, Option<i64>>(1).is_some())
            .map(|r| Moved {
                partition_id: r.get(1),
                partition: r.get(2),
                last_offset: r.get(3),
                committed: r.get(4),
            })
            .collect(),
    ))
}
