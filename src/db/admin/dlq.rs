//! The dead-letter queue: the wrappers of `queen.dead_letters_list_v2`,
//! `queen.dead_letters_count_v1`, `queen.dead_letter_find_v1` and
//! `queen.dead_letter_requeue_v2`.

use chrono::{DateTime, Utc};
use tokio_postgres::Row;
use tracing::instrument;
use uuid::Uuid;

use crate::db::{DbError, PgConn};

/// One dead letter with the copy of the segment that held it.
#[derive(Debug, Clone)]
pub struct DeadLetter {
    /// Row id.
    pub id: i64,
    /// The partition's id.
    pub partition_id: i64,
    /// Queue name.
    pub queue: String,
    /// Partition name.
    pub partition: String,
    /// The group that filed it.
    pub consumer_group: String,
    /// The message's offset.
    pub offset: i64,
    /// The message's transaction id.
    pub transaction_id: String,
    /// The error the consumer reported.
    pub error_message: Option<String>,
    /// Failed deliveries charged.
    pub retry_count: i32,
    /// When it was filed.
    pub failed_at: DateTime<Utc>,
    /// When the message was pushed.
    pub created_at: DateTime<Utc>,
    /// First offset of the segment copy.
    pub segment_base: i64,
    /// Codec byte of `blob`.
    pub codec: i16,
    /// Producer stamped on the segment.
    pub producer: Option<String>,
    /// The segment copy.
    pub blob: Vec<u8>,
    /// Matching dead letters in all.
    pub total: i64,
}

impl DeadLetter {
    fn from_row(r: &Row) -> Self {
        DeadLetter {
            id: r.get(0),
            partition_id: r.get(1),
            queue: r.get(2),
            partition: r.get(3),
            consumer_group: r.get(4),
            offset: r.get(5),
            transaction_id: r.get(6),
            error_message: r.get(7),
            retry_count: r.get(8),
            failed_at: r.get(9),
            created_at: r.get(10),
            segment_base: r.get(11),
            codec: r.get(12),
            producer: r.get(13),
            blob: r.get(14),
            total: r.get(15),
        }
    }
}

/// The filters of a DLQ listing (None = any).
#[derive(Debug, Clone, Default)]
pub struct Filter<'a> {
    /// Queue name.
    pub queue: Option<&'a str>,
    /// Consumer group.
    pub group: Option<&'a str>,
    /// Partition name.
    pub partition: Option<&'a str>,
    /// Failed at or after.
    pub from: Option<DateTime<Utc>>,
    /// Failed at or before.
    pub to: Option<DateTime<Utc>>,
}

/// A page of dead letters, newest first, cut after the last whose segment copy keeps the
/// page's copies within `max_bytes` (the first is always answered), and the total of
/// matching ones (`queen.dead_letters_list_v2`, and `queen.dead_letters_count_v1` past
/// the end).
#[instrument(skip_all, fields(db.system = "postgresql", db.operation = "dead_letters_list_v2"))]
pub async fn list(
    conn: &mut PgConn,
    tenant: &str,
    filter: &Filter<'_>,
    (limit, offset): (i32, i32),
    max_bytes: i64,
) -> Result<(Vec<DeadLetter>, i64), DbError> {
    const OP: &str = "dead_letters_list_v2";
    let st = conn
        .statement(
            OP,
            "SELECT id, partition_id, queue_name, partition_name, consumer_group, \
             message_offset, transaction_id, error_message, retry_count, failed_at, created_at, \
             segment_base, codec, producer, blob, total \
             FROM queen.dead_letters_list_v2($1, $2, $3, $4, $5, $6, $7, $8, $9)",
        )
        .await?;
    let rows = conn
        .client()
        .query(
            &st,
            &[
                &tenant,
                &filter.queue,
                &filter.group,
                &filter.partition,
                &filter.from,
                &filter.to,
                &limit,
                &offset,
                &max_bytes,
            ],
        )
        .await;
    let rows = rows.map_err(|e| conn.note(DbError::query(OP, e)))?;
    let letters: Vec<DeadLetter> = rows.iter().map(DeadLetter::from_row).collect();
    if let Some(first) = letters.first() {
        let total = first.total;
        return Ok((letters, total));
    }
    const COUNT: &str = "dead_letters_count_v1";
    let st = conn
        .statement(
            COUNT,
            "SELECT queen.dead_letters_count_v1($1, $2, $3, $4, $5, $6)",
        )
        .await?;
    let row = conn
        .client()
        .query_one(
            &st,
            &[
                &tenant,
                &filter.queue,
                &filter.group,
                &filter.partition,
                &filter.from,
                &filter.to,
            ],
        )
        .await;
    let total = row.map_err(|e| conn.note(DbError::query(COUNT, e)))?.get(0);
    Ok((letters, total))
}

/// The dead letters of one message, oldest first (`queen.dead_letter_find_v1`).
#[instrument(skip_all, fields(db.system = "postgresql", db.operation = "dead_letter_find_v1"))]
pub async fn find(
    conn: &mut PgConn,
    tenant: &str,
    partition_id: i64,
    transaction_id: &str,
) -> Result<Vec<DeadLetter>, DbError> {
    const OP: &str = "dead_letter_find_v1";
    let st = conn
        .statement(
            OP,
            "SELECT id, partition_id, queue_name, partition_name, consumer_group, \
             message_offset, transaction_id, error_message, retry_count, failed_at, created_at, \
             segment_base, codec, producer, blob, total \
             FROM queen.dead_letter_find_v1($1, $2, $3)",
        )
        .await?;
    let rows = conn
        .client()
        .query(&st, &[&tenant, &partition_id, &transaction_id])
        .await;
    let rows = rows.map_err(|e| conn.note(DbError::query(OP, e)))?;
    Ok(rows.iter().map(DeadLetter::from_row).collect())
}

/// Where a requeued message landed.
#[derive(Debug, Clone)]
pub struct Requeued {
    /// Queue name.
    pub queue: String,
    /// Partition name.
    pub partition: String,
    /// The new message's offset.
    pub offset: i64,
    /// Dead letters removed.
    pub removed: i32,
    /// The retried message's offset (it stays in the log, untouched).
    pub retried_offset: i64,
}

/// A requeue: the dead letter's message as a fresh one-frame segment.
pub struct Requeue<'a> {
    /// The partition.
    pub partition_id: i64,
    /// The dead message's transaction id.
    pub transaction_id: &'a str,
    /// The copy's own transaction id (the one its frame carries).
    pub new_transaction_id: &'a str,
    /// The new message's id.
    pub message_id: Uuid,
    /// The one-frame segment.
    pub blob: &'a [u8],
    /// Its codec byte.
    pub codec: i16,
    /// The segment producer.
    pub producer: Option<&'a str>,
}

/// Appends a copy of a dead-lettered message as a new message and removes its dead
/// letters; `None` when there was nothing to requeue (`queen.dead_letter_requeue_v2`).
#[instrument(skip_all, fields(db.system = "postgresql", db.operation = "dead_letter_requeue_v2"))]
pub async fn requeue(
    conn: &mut PgConn,
    tenant: &str,
    r: &Requeue<'_>,
) -> Result<Option<Requeued>, DbError> {
    const OP: &str = "dead_letter_requeue_v2";
    let st = conn
        .statement(
            OP,
            "SELECT queue_name, partition_name, base_offset, removed, retried_offset \
             FROM queen.dead_letter_requeue_v2($1, $2, $3, $4, $5, $6, $7, $8)",
        )
        .await?;
    let rows = conn
        .client()
        .query(
            &st,
            &[
                &tenant,
                &r.partition_id,
                &r.transaction_id,
                &r.new_transaction_id,
                &r.message_id,
                &r.blob,
                &r.codec,
                &r.producer,
            ],
        )
        .await;
    let rows = rows.map_err(|e| conn.note(DbError::query(OP, e)))?;
    Ok(rows.first().map(|row| Requeued {
        queue: row.get(0),
        partition: row.get(1),
        offset: row.get(2),
        removed: row.get(3),
        retried_offset: row.get(4),
    }))
}
