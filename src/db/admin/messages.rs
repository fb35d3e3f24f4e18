//! Messages: the wrappers of `queen.messages_list_v1`, `queen.message_get_v1`,
//! `queen.message_segment_lock_v1` and `queen.message_segment_rewrite_v1`.

use chrono::{DateTime, Utc};
use serde_json::Value;
use tracing::instrument;

use crate::db::{DbError, PgConn};

/// The filters of a message listing (None = any).
#[derive(Debug, Clone, Default)]
pub struct Filter<'a> {
    /// Queue name.
    pub queue: Option<&'a str>,
    /// Partition name.
    pub partition: Option<&'a str>,
    /// Namespace.
    pub namespace: Option<&'a str>,
    /// Task.
    pub task: Option<&'a str>,
    /// `pending`, `processing` or `completed` (queue-mode view).
    pub status: Option<&'a str>,
    /// Pushed at or after.
    pub from: Option<DateTime<Utc>>,
    /// Pushed at or before.
    pub to: Option<DateTime<Utc>>,
}

/// One listed message; the segment blob comes on the first message of each segment only.
#[derive(Debug, Clone)]
pub struct Listed {
    /// Partition id.
    pub partition_id: i64,
    /// Queue name.
    pub queue: String,
    /// Partition name.
    pub partition: String,
    /// The queue's namespace.
    pub namespace: Option<String>,
    /// The queue's task.
    pub task: Option<String>,
    /// The queue's priority.
    pub priority: i32,
    /// The message's offset.
    pub offset: i64,
    /// When its segment was pushed.
    pub created_at: DateTime<Utc>,
    /// Queue-mode status.
    pub status: String,
    /// Bus groups' status (None without bus groups).
    pub bus_status: Option<String>,
    /// Queue-mode lease expiry while processing.
    pub lease_expires_at: Option<DateTime<Utc>>,
    /// The segment's first offset.
    pub segment_base: i64,
    /// The segment (codec, producer, blob), on its first listed message only.
    pub segment: Option<(i16, Option<String>, Vec<u8>)>,
}

/// A page of messages, newest first (`queen.messages_list_v1`).
#[instrument(skip_all, fields(db.system = "postgresql", db.operation = "messages_list_v1"))]
pub async fn list(
    conn: &mut PgConn,
    tenant: &str,
    f: &Filter<'_>,
    limit: i32,
    offset: i32,
) -> Result<Vec<Listed>, DbError> {
    const OP: &str = "messages_list_v1";
    let st = conn
        .statement(
            OP,
            "SELECT partition_id, queue_name, partition_name, namespace, task, priority, \
             message_offset, created_at, status, bus_status, lease_expires_at, segment_base, \
             codec, producer, blob \
             FROM queen.messages_list_v1($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
        )
        .await?;
    let rows = conn
        .client()
        .query(
            &st,
            &[
                &tenant,
                &f.queue,
                &f.partition,
                &f.namespace,
                &f.task,
                &f.status,
                &f.from,
                &f.to,
                &limit,
                &offset,
            ],
        )
        .await;
    let rows = rows.map_err(|e| conn.note(DbError::query(OP, e)))?;
    Ok(rows
        .iter()
        .map(|r| {
            let codec: Option<i16> = r.get(12);
            let blob: Option<Vec<u8>> = r.get(14);
            Listed {
                partition_id: r.get(0),
                queue: r.get(1),
                partition: r.get(2),
                namespace: r.get(3),
                task: r.get(4),
                priority: r.get(5),
                offset: r.get(6),
                created_at: r.get(7),
                status: r.get(8),
                bus_status: r.get(9),
                lease_expires_at: r.get(10),
                segment_base: r.get(11),
                segment: codec.zip(blob).map(|(c, b)| (c, r.get(13), b)),
            }
        })
        .collect())
}

/// One message with its segment and its context.
#[derive(Debug, Clone)]
pub struct Found {
    /// Queue name.
    pub queue: String,
    /// Partition name.
    pub partition: String,
    /// The queue's namespace.
    pub namespace: Option<String>,
    /// The queue's task.
    pub task: Option<String>,
    /// The queue's priority.
    pub priority: i32,
    /// The message's offset.
    pub offset: i64,
    /// When its segment was pushed.
    pub created_at: DateTime<Utc>,
    /// Queue-mode status.
    pub status: String,
    /// Queue-mode lease expiry while processing.
    pub lease_expires_at: Option<DateTime<Utc>>,
    /// The segment's first offset.
    pub segment_base: i64,
    /// The segment's codec.
    pub codec: i16,
    /// The segment's producer.
    pub producer: Option<String>,
    /// The segment.
    pub blob: Vec<u8>,
    /// Latest dead letter's error.
    pub error_message: Option<String>,
    /// Latest dead letter's retry count.
    pub retry_count: Option<i32>,
    /// The queue's stored options.
    pub queue_config: Value,
    /// Every group's view of the message.
    pub consumer_groups: Value,
}

/// One message by (partition, transaction id) (`queen.message_get_v1`).
#[instrument(skip_all, fields(db.system = "postgresql", db.operation = "message_get_v1"))]
pub async fn get(
    conn: &mut PgConn,
    tenant: &str,
    partition_id: i64,
    transaction_id: &str,
) -> Result<Option<Found>, DbError> {
    const OP: &str = "message_get_v1";
    let st = conn
        .statement(
            OP,
            "SELECT queue_name, partition_name, namespace, task, priority, message_offset, \
             created_at, status, lease_expires_at, segment_base, codec, producer, blob, \
             error_message, retry_count, queue_config, consumer_groups \
             FROM queen.message_get_v1($1, $2, $3)",
        )
        .await?;
    let rows = conn
        .client()
        .query(&st, &[&tenant, &partition_id, &transaction_id])
        .await;
    let rows = rows.map_err(|e| conn.note(DbError::query(OP, e)))?;
    Ok(rows.first().map(|r| Found {
        queue: r.get(0),
        partition: r.get(1),
        namespace: r.get(2),
        task: r.get(3),
        priority: r.get(4),
        offset: r.get(5),
        created_at: r.get(6),
        status: r.get(7),
        lease_expires_at: r.get(8),
        segment_base: r.get(9),
        codec: r.get(10),
        producer: r.get(11),
        blob: r.get(12),
        error_message: r.get(13),
        retry_count: r.get(14),
        queue_config: r.get(15),
        consumer_groups: r.get(16),
    }))
}

/// A locked segment: the message's offset, the segment's base, codec and blob.
pub type LockedSegment = (i64, i64, i16, Vec<u8>);

/// Erases a message inside one transaction: locks its segment
/// (`queen.message_segment_lock_v1`), lets `rewrite` build the new blob from the locked one,
/// and stores it (`queen.message_segment_rewrite_v1`). `Ok(None)` when the message is
/// unknown; otherwise the dead letters deleted.
#[instrument(skip_all, fields(db.system = "postgresql", db.operation = "message_segment_rewrite_v1"))]
pub async fn erase<E>(
    conn: &mut PgConn,
    tenant: &str,
    partition_id: i64,
    transaction_id: &str,
    rewrite: impl FnOnce(&LockedSegment) -> Result<(i16, Vec<u8>), E>,
) -> Result<Option<Result<i32, E>>, DbError> {
    const LOCK: &str = "message_segment_lock_v1";
    const REWRITE: &str = "message_segment_rewrite_v1";
    let lock = conn
        .statement(
            LOCK,
            "SELECT message_offset, base_offset, codec, blob \
             FROM queen.message_segment_lock_v1($1, $2, $3)",
        )
        .await?;
    let store = conn
        .statement(
            REWRITE,
            "SELECT queen.message_segment_rewrite_v1($1, $2, $3, $4, $5)",
        )
        .await?;
    let result = async {
        let tx = conn
            .client()
            .transaction()
            .await
            .map_err(|e| DbError::query(LOCK, e))?;
        let rows = tx
            .query(&lock, &[&tenant, &partition_id, &transaction_id])
            .await
            .map_err(|e| DbError::query(LOCK, e))?;
        let Some(row) = rows.first() else {
            return Ok(None);
        };
        let locked: LockedSegment = (row.get(0), row.get(1), row.get(2), row.get(3));
        let (codec, blob) = match rewrite(&locked) {
            Ok(new) => new,
            Err(e) => return Ok(Some(Err(e))),
        };
        let dead: i32 = tx
            .query_one(
                &store,
                &[&partition_id, &locked.1, &transaction_id, &blob, &codec],
            )
            .await
            .map_err(|e| DbError::query(REWRITE, e))?
            .get(0);
        tx.commit().await.map_err(|e| DbError::query(REWRITE, e))?;
        Ok(Some(Ok(dead)))
    }
    .await;
    result.map_err(|e| conn.note(e))
}
