//! The wrapper of `queen.log_fetch_v1`: one call's entries in, per entry its watermarks
//! and the stored segments that cover the asked offset onwards.

use chrono::{DateTime, Utc};
use tracing::instrument;

use crate::db::{DbError, PgConn};

/// One entry of an offset read, as the SQL function takes it.
#[derive(Debug, Clone)]
pub struct FetchAsk<'a> {
    /// Queue name.
    pub queue: &'a str,
    /// Partition name.
    pub partition: &'a str,
    /// First offset wanted.
    pub offset: i64,
    /// Stored bytes this entry may take (its first segment is taken whatever its size).
    pub max_bytes: i64,
}

/// The call-wide bounds of an offset read.
#[derive(Debug, Clone, Copy)]
pub struct FetchBounds {
    /// Stored bytes the whole call may take (its first segment is taken whatever its size).
    pub call_bytes: i64,
    /// Segments the whole call may take.
    pub call_segments: i32,
}

/// One entry's answer from the database.
#[derive(Debug, Clone, Default)]
pub struct FetchedEntry {
    /// The tenant has the queue.
    pub queue_known: bool,
    /// The partition's id, when it exists.
    pub partition_id: Option<i64>,
    /// The offset the next push will take.
    pub high_watermark: i64,
    /// The first offset retention kept.
    pub log_start: i64,
    /// The segments from the one holding the asked offset, by base offset; empty when the
    /// offset is out of range or at the high watermark.
    pub segments: Vec<FetchedSegment>,
}

/// A stored segment, as the pop reads them.
#[derive(Debug, Clone)]
pub struct FetchedSegment {
    /// Offset of its first message.
    pub base_offset: i64,
    /// Messages it holds.
    pub msg_count: i32,
    /// When the push that wrote it was stored.
    pub created_at: DateTime<Utc>,
    /// `log_segments.codec`.
    pub codec: i16,
    /// The blob.
    pub blob: Vec<u8>,
}

/// Reads the entries in one statement (`queen.log_fetch_v1`); the answer holds one
/// [`FetchedEntry`] per ask, in order.
#[instrument(skip_all, fields(db.system = "postgresql", db.operation = "log_fetch_v1"))]
pub async fn fetch(
    conn: &mut PgConn,
    tenant: &str,
    asks: &[FetchAsk<'_>],
    bounds: FetchBounds,
) -> Result<Vec<FetchedEntry>, DbError> {
    const OP: &str = "log_fetch_v1";
    let st = conn
        .statement(
            OP,
            "SELECT k, queue_known, partition_id, high_watermark, log_start, base_offset, \
             msg_count, created_at, codec, blob \
             FROM queen.log_fetch_v1($1, $2, $3, $4, $5, $6, $7)",
        )
        .await?;
    let queues: Vec<&str> = asks.iter().map(|a| a.queue).collect();
    let partitions: Vec<&str> = asks.iter().map(|a| a.partition).collect();
    let offsets: Vec<i64> = asks.iter().map(|a| a.offset).collect();
    let entry_bytes: Vec<i64> = asks.iter().map(|a| a.max_bytes).collect();
    let rows = conn
        .client()
        .query(
            &st,
            &[
                &tenant,
                &queues,
                &partitions,
                &offsets,
                &entry_bytes,
                &bounds.call_bytes,
                &bounds.call_segments,
            ],
        )
        .await;
    let rows = rows.map_err(|e| conn.note(DbError::query(OP, e)))?;
    let mut entries: Vec<FetchedEntry> = Vec::with_capacity(asks.len());
    for row in &rows {
        let base_offset: Option<i64> = row.get(5);
        match base_offset {
            None => entries.push(FetchedEntry {
                queue_known: row.get(1),
                partition_id: row.get(2),
                high_watermark: row.get(3),
                log_start: row.get(4),
                segments: Vec::new(),
            }),
            Some(base_offset) => {
                let segment = FetchedSegment {
                    base_offset,
                    msg_count: row.get(6),
                    created_at: row.get(7),
                    codec: row.get(8),
                    blob: row.get(9),
                };
                // The function answers an entry's head row before its segments.
                if let Some(entry) = entries.last_mut() {
                    entry.segments.push(segment);
                }
            }
        }
    }
    Ok(entries)
}
