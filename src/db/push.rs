//! Appending segments: the wrapper of `queen.log_push_v1`.

use tokio_postgres::{GenericClient, Statement, Transaction};
use uuid::Uuid;

use super::{DbError, PgConn};

const LOG_PUSH: &str = "SELECT partition_id, duplicate, transaction_id, message_id, base_offset
     FROM queen.log_push_v1($1, $2, $3, $4, $5, $6, $7, $8)";

/// One segment for one (queue, partition), ready to append.
pub struct SegmentAppend<'a> {
    /// Tenant of the queue.
    pub tenant: &'a str,
    /// Queue name (created when missing).
    pub queue: &'a str,
    /// Partition name (created when missing).
    pub partition: &'a str,
    /// Transaction ids in frame order, free of duplicates among themselves.
    pub transaction_ids: &'a [String],
    /// Message ids in frame order.
    pub message_ids: &'a [Uuid],
    /// The stored bytes.
    pub blob: &'a [u8],
    /// Codec byte of `blob`.
    pub codec: i16,
    /// Producer stamped on the segment, if any.
    pub producer: Option<&'a str>,
}

/// A transaction id already stored in the partition.
#[derive(Debug, Clone)]
pub struct StoredDuplicate {
    /// The transaction id.
    pub transaction_id: String,
    /// The id of the message stored under it.
    pub message_id: Uuid,
    /// Its offset.
    pub offset: i64,
}

/// What `log_push_v1` did.
#[derive(Debug)]
pub enum AppendOutcome {
    /// The segment was stored at `base_offset`.
    Stored {
        /// The partition's id.
        partition_id: i64,
        /// Offset of the segment's first message.
        base_offset: i64,
    },
    /// Nothing was stored: these transaction ids already exist (rebuild without them).
    Duplicates {
        /// The partition's id.
        partition_id: i64,
        /// The stored duplicates.
        duplicates: Vec<StoredDuplicate>,
    },
}

/// One push's transaction: every segment of a request is appended in it, all or nothing.
pub struct PushTransaction<'c> {
    tx: Transaction<'c>,
    statement: Statement,
}

impl<'c> PushTransaction<'c> {
    /// Opens the transaction on a pooled connection.
    pub async fn begin(conn: &'c mut PgConn) -> Result<Self, DbError> {
        let statement = statement(conn).await?;
        let tx = conn
            .client()
            .transaction()
            .await
            .map_err(|e| DbError::query("log_push_v1", e))?;
        Ok(Self { tx, statement })
    }

    /// Calls `queen.log_push_v1`. Afterwards this transaction holds the partition's lock, so
    /// a second call without the reported duplicates is authoritative. Callers append
    /// partitions in (queue, partition) order so that two pushes cannot deadlock.
    pub async fn append(&self, append: &SegmentAppend<'_>) -> Result<AppendOutcome, DbError> {
        append_in(&self.tx, &self.statement, append).await
    }

    /// Commits every appended segment at once.
    pub async fn commit(self) -> Result<(), DbError> {
        self.tx
            .commit()
            .await
            .map_err(|e| DbError::query("log_push_v1", e))
    }
}

/// Prepares (once per connection) the statement calling `queen.log_push_v1`, for
/// [`append_in`].
pub async fn statement(conn: &mut PgConn) -> Result<Statement, DbError> {
    conn.statement("log_push_v1", LOG_PUSH).await
}

/// Calls `queen.log_push_v1` inside a transaction the caller owns, with the statement from
/// [`statement`]. Same contract as [`PushTransaction::append`].
#[tracing::instrument(skip_all, fields(db.system = "postgresql", db.operation = "log_push_v1"))]
pub async fn append_in(
    tx: &impl GenericClient,
    statement: &Statement,
    append: &SegmentAppend<'_>,
) -> Result<AppendOutcome, DbError> {
    let rows = tx
        .query(
            statement,
            &[
                &append.tenant,
                &append.queue,
                &append.partition,
                &append.transaction_ids,
                &append.message_ids,
                &append.blob,
                &append.codec,
                &append.producer,
            ],
        )
        .await
        .map_err(|e| DbError::query("log_push_v1", e))?;
    let first = rows
        .first()
        .expect("log_push_v1 returns at least one row for a non-empty segment");
    let partition_id: i64 = first.get("partition_id");
    if !first.get::<_, bool>("duplicate") {
        return Ok(AppendOutcome::Stored {
            partition_id,
            base_offset: first.get("base_offset"),
        });
    }
    let duplicates = rows
        .iter()
        .map(|row| StoredDuplicate {
            transaction_id: row.get("transaction_id"),
            message_id: row.get("message_id"),
            offset: row.get("base_offset"),
        })
        .collect();
    Ok(AppendOutcome::Duplicates {
        partition_id,
        duplicates,
    })
}
