//! Appending segments: the wrapper of `queen.log_push_v3`, and the read of one stored
//! segment that confirms a duplicate.

use tokio_postgres::{GenericClient, Statement};

use super::{DbError, PgConn};
use crate::segment::{stored_keys, KeyColumns};

pub mod single_append;

const LOG_PUSH: &str = "SELECT stale, partition_id, last_offset, window_seconds, seg_base, \
     seg_end, seg_age_ms, seg_keys_hi, seg_keys_lo, seg_hashes, seg_codec, seg_blob \
     FROM queen.log_push_v3($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)";

const LOG_PUSH_AT: &str = "SELECT stale, partition_id, last_offset, window_seconds, seg_base, \
     seg_end, seg_age_ms, seg_keys_hi, seg_keys_lo, seg_hashes, seg_codec, seg_blob \
     FROM queen.log_push_at_v1($1, $2, $3, $4, $5, $6, $7, $8, $9)";

const RESOLVE: &str = "SELECT partition_id, window_seconds, max_size, stored \
     FROM queen.log_partition_resolve_v1($1, $2, $3, $4)";

const SEGMENT_READ: &str = "SELECT codec, blob, base_offset, end_offset FROM queen.log_segments \
     WHERE partition_id = $1 AND base_offset <= $2 ORDER BY base_offset DESC LIMIT 1";

/// One segment of an append: its message count, codec byte and stored bytes.
#[derive(Debug, Clone, Copy)]
pub struct NewSegment<'a> {
    /// Messages (frames) in `bytes`.
    pub count: i32,
    /// Codec byte of `bytes`.
    pub codec: i16,
    /// The stored bytes.
    pub bytes: &'a [u8],
}

/// Segments for one (queue, partition), ready to append after the broker's dedup check.
pub struct PartitionAppend<'a> {
    /// Tenant of the queue.
    pub tenant: &'a str,
    /// Queue name (created when missing).
    pub queue: &'a str,
    /// Partition name (created when missing).
    pub partition: &'a str,
    /// Last offset whose transaction ids the broker's window holds (None: none).
    pub known_last: Option<i64>,
    /// Dedup window of queues that set none, seconds.
    pub default_window_secs: i32,
    /// The segments, appended at consecutive offsets in this order.
    pub segments: &'a [NewSegment<'a>],
    /// `txn_key` of every message of `segments`, in order.
    pub keys: &'a [i64],
    /// Producer stamped on the segments, if any.
    pub producer: Option<&'a str>,
}

/// A segment other writers appended within the dedup window, as a stale answer lists it.
#[derive(Debug, Clone)]
pub struct WindowSegment {
    /// Its first offset.
    pub base: i64,
    /// Its last offset.
    pub end: i64,
    /// How long ago it was stored, ms.
    pub age_ms: i64,
    /// Its transaction-id keys in offset order (None: a segment stored without keys or
    /// hashes; see `blob`).
    pub keys: Option<Vec<i64>>,
    /// Codec and bytes of a segment without keys, whose ids must be read from its frames.
    pub blob: Option<(i16, Vec<u8>)>,
}

/// What `log_push_v3` did.
#[derive(Debug)]
pub enum AppendOutcome {
    /// The segments were stored after `previous_last`.
    Stored {
        /// The partition's id.
        partition_id: i64,
        /// The partition's last offset before the append.
        previous_last: i64,
        /// The queue's dedup window, seconds (0: off).
        window_secs: i32,
        /// Appended by the one-statement append (else by `log_push_v3`).
        single_statement: bool,
    },
    /// Nothing was stored: the queue's `maxSize` leaves no room for these messages.
    Full {
        /// The partition's id.
        partition_id: i64,
        /// The queue's `maxSize`.
        max_size: i32,
    },
    /// Nothing was stored: other writers appended since `known_last`; add `segments` to the
    /// window, check again and call again (the partition lock is held).
    Stale {
        /// The partition's id.
        partition_id: i64,
        /// The partition's last offset now.
        last_offset: i64,
        /// The queue's dedup window, seconds.
        window_secs: i32,
        /// The segments above `known_last` inside the window, newest first.
        segments: Vec<WindowSegment>,
    },
}

/// The append statements of one connection, prepared once (see [`statements`]).
#[derive(Debug, Clone)]
pub struct AppendStatements {
    /// None on the Citus layout, which refuses them (see [`statements`]).
    single: Option<single_append::SingleStatements>,
    log_push_v3: Statement,
    /// Only on the Citus layout: the push found by name, then delegated by id.
    delegated: Option<DelegatedStatements>,
}

/// The push on the Citus layout: `queen.log_partition_resolve_v1` on the coordinator (the
/// partition's id, window and maxSize count, from the reference tables), then
/// `queen.log_push_at_v1`, delegated to the worker that holds the partition.
#[derive(Debug, Clone)]
struct DelegatedStatements {
    resolve: Statement,
    push_at: Statement,
}

/// Prepares (once per connection) the statements of [`append_in`]. On the Citus layout
/// ([`PgConn::distributed`]) the append is the delegated pair instead of the
/// one-statement append and `log_push_v3`: those find the partition by name in
/// `log_partitions`, which is distributed by id there (docs/scale-out.md).
pub async fn statements(conn: &mut PgConn) -> Result<AppendStatements, DbError> {
    let (single, delegated) = if conn.distributed() {
        let delegated = DelegatedStatements {
            resolve: conn.statement("log_partition_resolve_v1", RESOLVE).await?,
            push_at: conn.statement("log_push_at_v1", LOG_PUSH_AT).await?,
        };
        (None, Some(delegated))
    } else {
        (Some(single_append::statements(conn).await?), None)
    };
    Ok(AppendStatements {
        single,
        log_push_v3: conn.statement("log_push_v3", LOG_PUSH).await?,
        delegated,
    })
}

/// Prepares (once per connection) the statement of [`read_segment`].
pub async fn segment_statement(conn: &mut PgConn) -> Result<Statement, DbError> {
    conn.statement("segment_read", SEGMENT_READ).await
}

/// Appends inside a transaction the caller owns, with the statements from [`statements`]:
/// the one-statement append when it applies, else `queen.log_push_v3`. After it, the
/// transaction holds the partition's lock, so a second call after a stale answer is
/// authoritative. Callers append partitions in (queue, partition) order so that two pushes
/// cannot deadlock.
pub async fn append_in(
    tx: &impl GenericClient,
    statements: &AppendStatements,
    append: &PartitionAppend<'_>,
) -> Result<AppendOutcome, DbError> {
    if let Some(delegated) = &statements.delegated {
        return push_delegated(tx, delegated, append).await;
    }
    if let Some(single) = &statements.single {
        if let Some(stored) = single_append::try_single_append(tx, single, append).await? {
            return Ok(stored);
        }
    }
    log_push_v3(tx, &statements.log_push_v3, append).await
}

/// Calls `queen.log_push_v3`.
#[tracing::instrument(skip_all, fields(db.system = "postgresql", db.operation = "log_push_v3"))]
async fn log_push_v3(
    tx: &impl GenericClient,
    statement: &Statement,
    append: &PartitionAppend<'_>,
) -> Result<AppendOutcome, DbError> {
    let SegmentColumns {
        counts,
        codecs,
        blobs,
        keys,
    } = SegmentColumns::of(append);
    let rows = tx
        .query(
            statement,
            &[
                &append.tenant,
                &append.queue,
                &append.partition,
                &append.known_last,
                &append.default_window_secs,
                &counts,
                &codecs,
                &blobs,
                &keys.hi,
                &keys.lo,
                &append.producer,
            ],
        )
        .await
        .map_err(|e| DbError::query("log_push_v3", e))?;
    outcome(rows, "log_push_v3")
}

/// The push on the Citus layout: the partition resolved on the coordinator (created when
/// missing), the queue's `maxSize` checked there under its lock, then the append delegated
/// to the partition's worker. Answers as [`log_push_v3`] does.
#[tracing::instrument(skip_all, fields(db.system = "postgresql", db.operation = "log_push_at_v1"))]
async fn push_delegated(
    tx: &impl GenericClient,
    statements: &DelegatedStatements,
    append: &PartitionAppend<'_>,
) -> Result<AppendOutcome, DbError> {
    let row = tx
        .query_one(
            &statements.resolve,
            &[
                &append.tenant,
                &append.queue,
                &append.partition,
                &append.default_window_secs,
            ],
        )
        .await
        .map_err(|e| DbError::query("log_partition_resolve_v1", e))?;
    let partition_id: i64 = row.get("partition_id");
    let window_secs: i32 = row.get("window_seconds");
    let max_size: i32 = row.get("max_size");
    let stored: i64 = row.get("stored");
    let total: i64 = append.segments.iter().map(|s| i64::from(s.count)).sum();
    if max_size > 0 && stored + total > i64::from(max_size) {
        return Ok(AppendOutcome::Full {
            partition_id,
            max_size,
        });
    }
    let SegmentColumns {
        counts,
        codecs,
        blobs,
        keys,
    } = SegmentColumns::of(append);
    let rows = tx
        .query(
            &statements.push_at,
            &[
                &partition_id,
                &window_secs,
                &append.known_last,
                &counts,
                &codecs,
                &blobs,
                &keys.hi,
                &keys.lo,
                &append.producer,
            ],
        )
        .await
        .map_err(|e| DbError::query("log_push_at_v1", e))?;
    outcome(rows, "log_push_at_v1")
}

/// An append's segments and keys as the array parameters of `log_push_v3` and
/// `log_push_at_v1`.
struct SegmentColumns<'a> {
    counts: Vec<i32>,
    codecs: Vec<i16>,
    blobs: Vec<&'a [u8]>,
    keys: KeyColumns,
}

impl<'a> SegmentColumns<'a> {
    fn of(append: &PartitionAppend<'a>) -> Self {
        SegmentColumns {
            counts: append.segments.iter().map(|s| s.count).collect(),
            codecs: append.segments.iter().map(|s| s.codec).collect(),
            blobs: append.segments.iter().map(|s| s.bytes).collect(),
            keys: KeyColumns::of(append.keys),
        }
    }
}

/// What the rows of `log_push_v3` or `log_push_at_v1` (named `function`) say.
fn outcome(rows: Vec<tokio_postgres::Row>, function: &str) -> Result<AppendOutcome, DbError> {
    let first = rows
        .first()
        .unwrap_or_else(|| panic!("{function} returns at least one row for an append"));
    let partition_id: i64 = first.get("partition_id");
    let last_offset: i64 = first.get("last_offset");
    let window_secs: i32 = first.get("window_seconds");
    let Some(stale) = first.get::<_, Option<bool>>("stale") else {
        return Ok(AppendOutcome::Full {
            partition_id,
            max_size: window_secs,
        });
    };
    if !stale {
        return Ok(AppendOutcome::Stored {
            partition_id,
            previous_last: last_offset,
            window_secs,
            single_statement: false,
        });
    }
    let segments = rows[1..]
        .iter()
        .map(|row| {
            let codec: Option<i16> = row.get("seg_codec");
            let blob: Option<Vec<u8>> = row.get("seg_blob");
            WindowSegment {
                base: row.get("seg_base"),
                end: row.get("seg_end"),
                age_ms: row.get("seg_age_ms"),
                keys: stored_keys(
                    row.get("seg_keys_hi"),
                    row.get("seg_keys_lo"),
                    row.get("seg_hashes"),
                ),
                blob: codec.zip(blob),
            }
        })
        .collect();
    Ok(AppendOutcome::Stale {
        partition_id,
        last_offset,
        window_secs,
        segments,
    })
}

/// A stored segment read back: its codec, bytes and offsets.
#[derive(Debug)]
pub struct StoredSegment {
    /// Codec byte of `bytes`.
    pub codec: i16,
    /// The stored bytes.
    pub bytes: Vec<u8>,
    /// Its first offset.
    pub base: i64,
    /// Its last offset.
    pub end: i64,
}

/// The segment of `partition_id` that holds `offset`, if it still exists.
pub async fn read_segment(
    client: &impl GenericClient,
    statement: &Statement,
    partition_id: i64,
    offset: i64,
) -> Result<Option<StoredSegment>, DbError> {
    let row = client
        .query_opt(statement, &[&partition_id, &offset])
        .await
        .map_err(|e| DbError::query("segment_read", e))?;
    Ok(row
        .map(|row| StoredSegment {
            codec: row.get(0),
            bytes: row.get(1),
            base: row.get(2),
            end: row.get(3),
        })
        .filter(|segment| segment.end >= offset))
}

/// Creates the partitions `names` ((queue, partition) pairs) of `tenant` and their queues
/// where missing, each in a transaction of its own (`queen.log_partition_resolve_v1`
/// outside any transaction; the calls are pipelined, one network wait for them all). The
/// Citus layout's pushes call it before their transaction, so that transaction writes no
/// reference table (see `log::push::directory`).
#[tracing::instrument(skip_all, fields(db.system = "postgresql", db.operation = "log_partition_resolve_v1"))]
pub async fn create_partitions(
    conn: &mut PgConn,
    tenant: &str,
    names: &[(&str, &str)],
    default_window_secs: i32,
) -> Result<(), DbError> {
    let resolve = conn.statement("log_partition_resolve_v1", RESOLVE).await?;
    let client: &tokio_postgres::Client = conn.client();
    type Param<'p> = &'p (dyn tokio_postgres::types::ToSql + Sync);
    let params: Vec<[Param<'_>; 4]> = names
        .iter()
        .map(|(queue, partition)| -> [Param<'_>; 4] {
            [&tenant, queue, partition, &default_window_secs]
        })
        .collect();
    let calls = params.iter().map(|p| client.query_one(&resolve, p));
    let created = futures_util::future::try_join_all(calls).await;
    match created {
        Ok(_) => Ok(()),
        Err(e) => Err(conn.note(DbError::query("log_partition_resolve_v1", e))),
    }
}
