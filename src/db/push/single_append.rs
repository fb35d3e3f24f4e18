//! The single-statement append: the common push in one plain statement.
//!
//! `queen.log_push_v2` answers every push shape, but it is plpgsql: about eight statements,
//! each with its executor start-up, for a push that in most cases appends one segment to a
//! partition whose last offset the broker's dedup window already covers. This statement does
//! exactly that append and nothing else: it locks the partition row `FOR NO KEY UPDATE`
//! (held to the caller's COMMIT, as `log_push_v2` holds it), and appends only when the
//! window's check is complete (the partition's last offset is the one the broker knows, or
//! the partition is empty, or the queue's dedup is off), with the same offsets, created_at
//! rule and hashes `log_push_v2` would write. When the queue or partition row is missing, the
//! queue sets a `maxSize` (only `log_push_v2` counts it), or other writers appended since, it
//! writes nothing and returns no row; the caller then calls
//! `log_push_v2` in the same transaction, which answers as it always did.

use tokio_postgres::types::ToSql;
use tokio_postgres::{GenericClient, Row, Statement};

use super::super::{DbError, PgConn};
use super::{AppendOutcome, NewSegment, PartitionAppend};

/// `$1` tenant, `$2` queue, `$3` partition, `$4` the last offset the broker's window covers
/// (NULL: none), `$5` the broker's default dedup window, `$6` message count, `$7` codec,
/// `$8` blob, `$9` the messages' hashes, `$10` producer. One row (partition id, last offset
/// before the append, dedup window) when it appended; none otherwise.
const SINGLE_APPEND: &str = "
WITH part AS (
    SELECT p.id, p.last_offset, coalesce(q.dedup_window_seconds, $5::integer) AS window_seconds
    FROM queen.log_partitions p JOIN queen.queues q ON q.id = p.queue_id
    WHERE q.tenant = $1 AND q.name = $2 AND p.name = $3
      -- A queue with a maxSize is counted and locked by log_push_v2 only.
      AND q.max_size = 0
    FOR NO KEY UPDATE OF p
), ok AS (
    SELECT part.id, part.last_offset, part.window_seconds,
           greatest(clock_timestamp(),
                    (SELECT s.created_at FROM queen.log_segments s
                     WHERE s.partition_id = part.id
                     ORDER BY s.base_offset DESC LIMIT 1)) AS created
    FROM part
    WHERE NOT (part.window_seconds > 0 AND part.last_offset >= 0
               AND part.last_offset IS DISTINCT FROM $4::bigint)
), ins AS (
    INSERT INTO queen.log_segments
        (partition_id, base_offset, end_offset, msg_count, created_at, codec, producer, blob,
         txn_hashes)
    SELECT ok.id, ok.last_offset + 1, ok.last_offset + $6::integer, $6::integer, ok.created,
           $7::smallint, $10::text, $8::bytea, $9::bigint[]
    FROM ok
    RETURNING partition_id
), upd AS (
    UPDATE queen.log_partitions p
    SET last_offset = ok.last_offset + $6::integer,
        last_write_at = date_trunc('second', ok.created)
    FROM ok WHERE p.id = ok.id
    RETURNING p.id
)
SELECT ok.id, ok.last_offset, ok.window_seconds
FROM ok JOIN ins ON ins.partition_id = ok.id JOIN upd ON upd.id = ok.id";

/// Prepares (once per connection) the statement of [`try_single_append`].
pub async fn statement(conn: &mut PgConn) -> Result<Statement, DbError> {
    conn.statement("push_single_append", SINGLE_APPEND).await
}

/// Appends `append` in one statement when it is one segment the window's check already
/// covers: `Some(Stored)` when it appended, `None` when nothing was written (call
/// `log_push_v2`). Inside the caller's transaction, like `log_push_v2`.
#[tracing::instrument(skip_all, fields(db.system = "postgresql", db.operation = "push_single_append"))]
pub async fn try_single_append(
    tx: &impl GenericClient,
    statement: &Statement,
    append: &PartitionAppend<'_>,
) -> Result<Option<AppendOutcome>, DbError> {
    let Some(segment) = single_segment(append) else {
        return Ok(None);
    };
    let row = tx
        .query_opt(statement, &params(append, &segment))
        .await
        .map_err(|e| DbError::query("push_single_append", e))?;
    Ok(row.map(stored))
}

/// [`try_single_append`] in a transaction of its own, committed in the same round trip
/// (see [`PgConn::query_opt_alone`]): `Some(Stored)` once the append is committed, `None`
/// when nothing was written (the caller then runs its transaction with `log_push_v2`).
/// This is the push of one partition that the window already covers: one round trip to
/// PostgreSQL instead of three (`BEGIN`, the append, `COMMIT`).
#[tracing::instrument(skip_all, fields(db.system = "postgresql", db.operation = "push_single_append"))]
pub async fn append_alone(
    conn: &mut PgConn,
    append: &PartitionAppend<'_>,
) -> Result<Option<AppendOutcome>, DbError> {
    let Some(segment) = single_segment(append) else {
        return Ok(None);
    };
    let statement = statement(conn).await?;
    let row = conn
        .query_opt_alone("push_single_append", &statement, &params(append, &segment))
        .await?;
    Ok(row.map(stored))
}

/// The one segment of `append` when it is the shape the statement takes.
fn single_segment<'a>(append: &PartitionAppend<'a>) -> Option<NewSegment<'a>> {
    let [segment] = append.segments else {
        return None;
    };
    let counted = usize::try_from(segment.count).ok() == Some(append.hashes.len());
    (segment.count >= 1 && counted).then_some(*segment)
}

/// The statement's parameters, in `$n` order.
fn params<'a>(
    append: &'a PartitionAppend<'_>,
    segment: &'a NewSegment<'_>,
) -> [&'a (dyn ToSql + Sync); 10] {
    [
        &append.tenant,
        &append.queue,
        &append.partition,
        &append.known_last,
        &append.default_window_secs,
        &segment.count,
        &segment.codec,
        &segment.bytes,
        &append.hashes,
        &append.producer,
    ]
}

fn stored(row: Row) -> AppendOutcome {
    AppendOutcome::Stored {
        partition_id: row.get(0),
        previous_last: row.get(1),
        window_secs: row.get(2),
        single_statement: true,
    }
}
