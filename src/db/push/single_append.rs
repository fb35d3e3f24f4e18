//! The single-statement append: the common push in one plain statement.
//!
//! `queen.log_push_v3` answers every push shape, but it is plpgsql: about eight statements,
//! each with its executor start-up, for a push that in most cases appends one segment to a
//! partition whose last offset the broker's dedup window already covers. This statement does
//! exactly that append, for one partition or several at once, and nothing else: it locks
//! the partition rows (held to the caller's COMMIT, as `log_push_v3` holds them; several
//! `FOR NO KEY UPDATE` in (queue, partition) byte order, the order every append locks them
//! in; one by updating it first, the `UPDATE`'s own lock), and
//! appends only when the window's check is complete for every one of them (each partition's
//! last offset is the one the broker knows, or the partition is empty, or the queue's dedup
//! is off), with the same offsets, created_at rule and keys `log_push_v3` would write.
//! When a queue or partition row is missing, a queue sets a `maxSize` (only `log_push_v3`
//! counts it), or other writers appended since, it writes nothing at all and returns no
//! row (and, unless a writer appended between its unlocked check and its lock, it locks
//! nothing either); the caller then takes `log_push_v3`, which answers as it always did.

use tokio_postgres::types::ToSql;
use tokio_postgres::{GenericClient, Row, Statement};

use super::super::{DbError, PgConn};
use super::{AppendOutcome, NewSegment, PartitionAppend};
use crate::segment::KeyColumns;

/// One partition: `$1` tenant, `$2` queue, `$3` partition, `$4` the last offset the
/// broker's window covers (NULL: none), `$5` the broker's default dedup window, `$6`
/// message count, `$7` codec, `$8` blob, `$9` and `$11` the messages' keys (`txn_keys_hi`
/// and `txn_keys_lo`, see [`KeyColumns`]), `$10` producer. One row
/// (partition id, last offset before the append, dedup window) when it appended; none
/// otherwise. Kept apart from [`MANY`], which does the same over arrays: this plain form
/// cost PostgreSQL about a fifth less CPU per push at batch 10 (queen-bench, 19-20 against
/// 24-26 s per million messages), and most commits hold one partition.
///
/// The partition row is updated first, and that `UPDATE` is the lock: a `FOR NO KEY UPDATE`
/// before it wrote a lock record of its own to the WAL for every push. A concurrent writer
/// of the same row makes the `UPDATE` wait for its commit and check the row again, so a
/// window that went stale meanwhile updates nothing and nothing is inserted. The segment's
/// `created_at` is read after the `UPDATE` holds the row, from the same snapshot as before;
/// `last_write_at` comes out as before (the truncated `created_at`) without reading the
/// previous segment, since every writer leaves it at that segment's truncated time.
const SINGLE: &str = "
WITH upd AS (
    UPDATE queen.log_partitions p
    SET last_offset = p.last_offset + $6::integer,
        last_write_at = greatest(p.last_write_at, date_trunc('second', clock_timestamp()))
    FROM queen.queues q
    WHERE q.id = p.queue_id AND q.tenant = $1 AND q.name = $2 AND p.name = $3
      -- A queue with a maxSize is counted and locked by log_push_v3 only.
      AND q.max_size = 0
      AND NOT (coalesce(q.dedup_window_seconds, $5::integer) > 0 AND p.last_offset >= 0
               AND p.last_offset IS DISTINCT FROM $4::bigint)
    RETURNING p.id, p.last_offset - $6::integer AS last_offset,
              coalesce(q.dedup_window_seconds, $5::integer) AS window_seconds
), ins AS (
    INSERT INTO queen.log_segments
        (partition_id, base_offset, end_offset, msg_count, created_at, codec, producer, blob,
         txn_keys_hi, txn_keys_lo)
    SELECT upd.id, upd.last_offset + 1, upd.last_offset + $6::integer, $6::integer,
           greatest(clock_timestamp(),
                    (SELECT s.created_at FROM queen.log_segments s
                     WHERE s.partition_id = upd.id
                     ORDER BY s.base_offset DESC LIMIT 1)),
           $7::smallint, $10::text, $8::bytea, $9::integer[], $11::smallint[]
    FROM upd
    RETURNING partition_id
)
SELECT 1::bigint, upd.id, upd.last_offset, upd.window_seconds
FROM upd JOIN ins ON ins.partition_id = upd.id";

/// A partition's first segment, with the partition: the parameters of [`SINGLE`], for a
/// partition the broker's window has never seen (`$4` NULL). When the queue exists without
/// a `maxSize` and the partition does not, it inserts the partition's directory row, the
/// partition row already holding the segment's last offset, and the segment at offset 0,
/// and answers as [`SINGLE`] does (the last offset before the append is -1). When the partition exists (or the queue
/// does not, or sets a `maxSize`) it writes nothing and returns no row: the caller goes on
/// to [`SINGLE`], then `log_push_v3`; it does not even try the insert then, so a tenant's
/// partition-limit trigger (which locks the queue until COMMIT) runs only for a partition
/// being created, as in `log_push_v3`. A concurrent creator of the same partition makes
/// the insert a no-op too (the unique (queue, name) index waits for it). `log_push_v3`
/// takes a dozen statements for the same first push, and a transaction of its own.
const FIRST: &str = "
WITH q AS (
    SELECT q.id, coalesce(q.dedup_window_seconds, $5::integer) AS window_seconds,
           clock_timestamp() AS created
    FROM queen.queues q
    WHERE q.tenant = $1 AND q.name = $2 AND $4::bigint IS NULL
      -- A queue with a maxSize is counted and locked by log_push_v3 only.
      AND q.max_size = 0
      -- An existing partition is not inserted at all: no partition-limit trigger (and its
      -- per-queue lock, held to COMMIT), no partition id spent on a conflict.
      AND NOT EXISTS (SELECT 1 FROM queen.log_partitions p
                      WHERE p.queue_id = q.id AND p.name = $3::text)
), dir AS (
    -- The directory row first (078_partition_directory.sql), as
    -- queen.log_partition_ensure_v1 does: its unique key orders two creators.
    INSERT INTO queen.log_partition_names (id, queue_id, name)
    SELECT nextval('queen.log_partitions_id_seq'), q.id, $3::text
    FROM q
    ON CONFLICT (queue_id, name) DO NOTHING
    RETURNING id
), part AS (
    INSERT INTO queen.log_partitions (id, queue_id, name, last_offset, last_write_at)
    SELECT dir.id, q.id, $3::text, $6::integer - 1, date_trunc('second', q.created)
    FROM dir, q
    ON CONFLICT (queue_id, name) DO NOTHING
    RETURNING id
), ins AS (
    INSERT INTO queen.log_segments
        (partition_id, base_offset, end_offset, msg_count, created_at, codec, producer, blob,
         txn_keys_hi, txn_keys_lo)
    SELECT part.id, 0, $6::integer - 1, $6::integer, q.created, $7::smallint, $10::text,
           $8::bytea, $9::integer[], $11::smallint[]
    FROM part, q
    RETURNING partition_id
)
SELECT 1::bigint, ins.partition_id, -1::bigint, q.window_seconds FROM ins, q";

/// Several partitions, all appended or none: `$1` tenant, then one array element per
/// partition: `$2` queue, `$3` partition, `$4` the last offset the broker's window covers
/// (NULL: none), `$6` message count, `$7` codec, `$8` blob, `$10` producer; `$5` the
/// broker's default dedup window; `$9` and `$11` every message's key (as [`SINGLE`] takes
/// them), partition after partition. One row per partition (its place in the arrays from 1,
/// partition id, last offset before the append, dedup window) when it appended them all;
/// none otherwise.
const MANY: &str = r#"
WITH req AS (
    SELECT r.k, r.queue, r.partition, r.known_last, r.cnt, r.codec, r.blob, r.producer,
           (sum(r.cnt) OVER (ORDER BY r.k) - r.cnt)::integer AS key_from
    FROM unnest($2::text[], $3::text[], $4::bigint[], $6::integer[], $7::smallint[],
                $8::bytea[], $10::text[])
         WITH ORDINALITY AS r(queue, partition, known_last, cnt, codec, blob, producer, k)
), fresh AS (
    -- The same check without locks first: a push that must decline (another writer
    -- appended since, a partition is missing) declines without locking a row, so its
    -- transaction stays read-only and its COMMIT waits for no flush.
    SELECT count(*) = cardinality($2::text[]) AS all_ok
    FROM req
    JOIN queen.queues q ON q.tenant = $1 AND q.name = req.queue
    JOIN queen.log_partitions p ON p.queue_id = q.id AND p.name = req.partition
    WHERE q.max_size = 0
      AND NOT (coalesce(q.dedup_window_seconds, $5::integer) > 0 AND p.last_offset >= 0
               AND p.last_offset IS DISTINCT FROM req.known_last)
), part AS (
    SELECT req.k, p.id, p.last_offset,
           coalesce(q.dedup_window_seconds, $5::integer) AS window_seconds
    FROM req
    JOIN queen.queues q ON q.tenant = $1 AND q.name = req.queue
    JOIN queen.log_partitions p ON p.queue_id = q.id AND p.name = req.partition
    -- A queue with a maxSize is counted and locked by log_push_v3 only.
    WHERE q.max_size = 0 AND (SELECT all_ok FROM fresh)
    ORDER BY req.queue COLLATE "C", req.partition COLLATE "C"
    FOR NO KEY UPDATE OF p
), ok AS (
    SELECT part.k, part.id, part.last_offset, part.window_seconds, req.cnt, req.codec,
           req.blob, req.producer, req.key_from,
           greatest(clock_timestamp(),
                    (SELECT s.created_at FROM queen.log_segments s
                     WHERE s.partition_id = part.id
                     ORDER BY s.base_offset DESC LIMIT 1)) AS created
    FROM part JOIN req ON req.k = part.k
    WHERE NOT (part.window_seconds > 0 AND part.last_offset >= 0
               AND part.last_offset IS DISTINCT FROM req.known_last)
), go AS (
    SELECT count(*) = cardinality($2::text[]) AS all_ok FROM ok
), ins AS (
    INSERT INTO queen.log_segments
        (partition_id, base_offset, end_offset, msg_count, created_at, codec, producer, blob,
         txn_keys_hi, txn_keys_lo)
    SELECT ok.id, ok.last_offset + 1, ok.last_offset + ok.cnt, ok.cnt, ok.created, ok.codec,
           ok.producer, ok.blob, ($9::integer[])[ok.key_from + 1 : ok.key_from + ok.cnt],
           ($11::smallint[])[ok.key_from + 1 : ok.key_from + ok.cnt]
    FROM ok, go WHERE go.all_ok
    RETURNING partition_id
), upd AS (
    UPDATE queen.log_partitions p
    SET last_offset = ok.last_offset + ok.cnt,
        last_write_at = date_trunc('second', ok.created)
    FROM ok, go
    WHERE go.all_ok AND p.id = ok.id
    RETURNING p.id
)
SELECT ok.k, ok.id, ok.last_offset, ok.window_seconds
FROM ok JOIN ins ON ins.partition_id = ok.id JOIN upd ON upd.id = ok.id"#;

/// The one-partition statements, prepared once per connection: [`FIRST`] and [`SINGLE`].
#[derive(Debug, Clone)]
pub struct SingleStatements {
    first: Statement,
    single: Statement,
}

/// Prepares (once per connection) the one-partition statements, which
/// [`try_single_append`] runs inside the caller's transaction.
pub async fn statements(conn: &mut PgConn) -> Result<SingleStatements, DbError> {
    Ok(SingleStatements {
        first: conn.statement("push_first_append", FIRST).await?,
        single: conn.statement("push_single_append", SINGLE).await?,
    })
}

/// Appends `append` in one statement when it is one segment and either the partition's
/// first ([`FIRST`], tried when the window knows nothing of it) or one the window's check
/// already covers ([`SINGLE`]): `Some(Stored)` when it appended, `None` when nothing was
/// written (call `log_push_v3`). Inside the caller's transaction, like `log_push_v3`.
#[tracing::instrument(skip_all, fields(db.system = "postgresql", db.operation = "push_single_append"))]
pub async fn try_single_append(
    tx: &impl GenericClient,
    statements: &SingleStatements,
    append: &PartitionAppend<'_>,
) -> Result<Option<AppendOutcome>, DbError> {
    let Some(segment) = single_segment(append) else {
        return Ok(None);
    };
    let rows = first_or_single(tx, statements, append, &segment).await?;
    let appended = stored(rows, 1).and_then(|mut all| all.pop());
    Ok(appended.map(|a| AppendOutcome::Stored {
        partition_id: a.partition_id,
        previous_last: a.previous_last,
        window_secs: a.window_secs,
        single_statement: true,
    }))
}

/// The rows of [`FIRST`] when the window knows nothing of the partition and it created
/// the partition, else those of [`SINGLE`]: both the transactional path and the one-round-
/// trip path append one partition this way, inside the caller's transaction or each as a
/// transaction of its own.
async fn first_or_single(
    client: &impl GenericClient,
    statements: &SingleStatements,
    append: &PartitionAppend<'_>,
    segment: &NewSegment<'_>,
) -> Result<Vec<Row>, DbError> {
    let keys = KeyColumns::of(append.keys);
    let params = single_params(append, segment, &keys);
    if append.known_last.is_none() {
        let rows = client
            .query(&statements.first, &params)
            .await
            .map_err(|e| DbError::query("push_first_append", e))?;
        if !rows.is_empty() {
            return Ok(rows);
        }
    }
    client
        .query(&statements.single, &params)
        .await
        .map_err(|e| DbError::query("push_single_append", e))
}

/// The statement for every partition of `appends` (each one segment, in (queue,
/// partition) order) in a transaction of its own, committed in the same round trip (see
/// [`PgConn::query_alone`]): one outcome per append once they are all committed, `None` when
/// nothing was written (the caller then runs its transaction with `log_push_v3`). This is
/// the common push, or combined pushes, that the windows already cover: one round trip to
/// PostgreSQL instead of one per partition plus `BEGIN` and `COMMIT`. On the Citus layout
/// it writes nothing (`None`): Citus refuses both statements there (docs/scale-out.md).
#[tracing::instrument(skip_all, fields(db.system = "postgresql", db.operation = "push_single_append"))]
pub async fn append_alone(
    conn: &mut PgConn,
    appends: &[PartitionAppend<'_>],
) -> Result<Option<Vec<Appended>>, DbError> {
    if conn.distributed() {
        return Ok(None);
    }
    let rows = match appends {
        [append] => {
            let Some(segment) = single_segment(append) else {
                return Ok(None);
            };
            let statements = statements(conn).await?;
            // Outside any transaction block, each statement commits on its own (see
            // `PgConn::query_alone`).
            let rows = first_or_single(conn.client(), &statements, append, &segment).await;
            rows.map_err(|e| conn.note(e))?
        }
        _ => {
            let Some(arrays) = Arrays::of(appends) else {
                return Ok(None);
            };
            let statement = conn.statement("push_many_append", MANY).await?;
            conn.query_alone("push_many_append", &statement, &arrays.params())
                .await?
        }
    };
    Ok(stored(rows, appends.len()))
}

/// The one segment of `append` when it is the shape the statements take: one segment whose
/// count is its number of keys.
fn single_segment<'a>(append: &PartitionAppend<'a>) -> Option<NewSegment<'a>> {
    let [segment] = append.segments else {
        return None;
    };
    let counted = usize::try_from(segment.count).ok() == Some(append.keys.len());
    (segment.count >= 1 && counted).then_some(*segment)
}

/// [`SINGLE`]'s parameters, in `$n` order.
fn single_params<'a>(
    append: &'a PartitionAppend<'_>,
    segment: &'a NewSegment<'_>,
    keys: &'a KeyColumns,
) -> [&'a (dyn ToSql + Sync); 11] {
    [
        &append.tenant,
        &append.queue,
        &append.partition,
        &append.known_last,
        &append.default_window_secs,
        &segment.count,
        &segment.codec,
        &segment.bytes,
        &keys.hi,
        &append.producer,
        &keys.lo,
    ]
}

/// Where the statement stored one partition's segment.
#[derive(Debug, Clone, Copy)]
pub struct Appended {
    /// The partition's id.
    pub partition_id: i64,
    /// The partition's last offset before the append.
    pub previous_last: i64,
    /// The queue's dedup window, seconds (0: off).
    pub window_secs: i32,
}

/// [`MANY`]'s parameters as arrays, one element per partition.
struct Arrays<'a> {
    tenant: &'a str,
    default_window_secs: i32,
    queues: Vec<&'a str>,
    partitions: Vec<&'a str>,
    known: Vec<Option<i64>>,
    counts: Vec<i32>,
    codecs: Vec<i16>,
    blobs: Vec<&'a [u8]>,
    keys: KeyColumns,
    producers: Vec<Option<&'a str>>,
}

impl<'a> Arrays<'a> {
    /// `None` when some append is not the statement's shape (one segment whose count is its
    /// number of keys), or the appends are not of one tenant.
    fn of(appends: &[PartitionAppend<'a>]) -> Option<Self> {
        let first = appends.first()?;
        let mut arrays = Arrays {
            tenant: first.tenant,
            default_window_secs: first.default_window_secs,
            queues: Vec::with_capacity(appends.len()),
            partitions: Vec::with_capacity(appends.len()),
            known: Vec::with_capacity(appends.len()),
            counts: Vec::with_capacity(appends.len()),
            codecs: Vec::with_capacity(appends.len()),
            blobs: Vec::with_capacity(appends.len()),
            keys: KeyColumns::default(),
            producers: Vec::with_capacity(appends.len()),
        };
        for append in appends {
            let segment = single_segment(append)?;
            if append.tenant != first.tenant {
                return None;
            }
            arrays.queues.push(append.queue);
            arrays.partitions.push(append.partition);
            arrays.known.push(append.known_last);
            arrays.counts.push(segment.count);
            arrays.codecs.push(segment.codec);
            arrays.blobs.push(segment.bytes);
            arrays.keys.extend(append.keys);
            arrays.producers.push(append.producer);
        }
        Some(arrays)
    }

    /// In `$n` order.
    fn params(&self) -> [&(dyn ToSql + Sync); 11] {
        [
            &self.tenant,
            &self.queues,
            &self.partitions,
            &self.known,
            &self.default_window_secs,
            &self.counts,
            &self.codecs,
            &self.blobs,
            &self.keys.hi,
            &self.producers,
            &self.keys.lo,
        ]
    }
}

/// Where each of the `n` partitions was appended, in the arrays' order, when all were.
fn stored(rows: Vec<Row>, n: usize) -> Option<Vec<Appended>> {
    if rows.len() != n {
        return None;
    }
    let mut appended: Vec<Option<Appended>> = vec![None; n];
    for row in rows {
        let k: i64 = row.get(0);
        let slot = usize::try_from(k - 1)
            .ok()
            .and_then(|k| appended.get_mut(k))?;
        *slot = Some(Appended {
            partition_id: row.get(1),
            previous_last: row.get(2),
            window_secs: row.get(3),
        });
    }
    appended.into_iter().collect()
}
