//! The single-statement claim: the hot-list pop's common case in one plain statement.
//!
//! `queen.log_pop_list_v2` answers every candidate list, but it is plpgsql around
//! `queen.log_pop_v3`: about ten statements, each with its executor start-up, for a pop that
//! in most cases claims the first candidate's next messages. This statement claims one
//! partition the way `log_pop_v3` does, and only in the case it can settle alone: the
//! group's cursor row exists and holds no live lease (an expired one is charged against
//! retryLimit as `log_pop_v3` charges it, unless that spends the last retry: dead-lettering
//! is left to `log_pop_v3`) and no retryDelay still ahead, the
//! partition has messages beyond it, the queue defers and expires nothing the statement
//! would have to check (no delayedProcessing, ttl or maxWaitTimeSeconds; windowBuffer only
//! when the actor's wheel is its authority) and the group does not conflate. It locks the
//! cursor row `FOR UPDATE SKIP LOCKED`, takes the messages from the first segment holding
//! anything past the cursor (after a retention gap, the first remaining one) up to the
//! budget, and leases them (or, with auto-ack, moves the cursor)
//! exactly as `log_pop_v3` would, with the same attempt count and the same
//! synchronous_commit rule. Anything else returns no row and changes nothing; the caller
//! then runs `log_pop_list_v2` over the whole candidate list.

use chrono::{DateTime, Duration, Utc};
use tokio_postgres::Row;

use super::super::{DbError, PgConn};
use super::{slice, ClaimParams, ClaimedSlice};
use crate::segment::stored_keys;

/// `$1` partition, `$2` group, `$3` worker (lease id), `$4` budget, `$5` lease seconds
/// (NULL: the queue's), `$6` auto-ack, `$7` skip the windowBuffer check, `$8` tenant, `$9`
/// queue name. Rows: the fourteen slice columns, then pending_after, the lease seconds,
/// the synchronous_commit set for the transaction (selected so it is surely evaluated) and
/// the delivered messages' transaction-id keys as the segment holds them (`txn_keys_hi` and
/// `txn_keys_lo`, or an earlier broker's `txn_hashes`; all NULL for a segment stored
/// without them), which the lease book keeps for the ack.
const SINGLE_CLAIM: &str = "
WITH claim AS (
    SELECT c.partition_id, c.committed, c.attempt_count, c.attempt_offset, p.last_offset,
           p.name AS partition_name, q.name AS queue_name,
           coalesce($5::integer, q.lease_time, 60) AS lease_seconds,
           x.charge, x.charged
    FROM queen.log_consumers c
    JOIN queen.log_partitions p ON p.id = c.partition_id
    JOIN queen.queues q ON q.id = p.queue_id
    CROSS JOIN LATERAL (
        SELECT e.charge,
               CASE WHEN c.failed_offset IS NOT DISTINCT FROM e.charge
                    THEN c.failed_count + 1 ELSE 1 END AS charged
        FROM (SELECT CASE WHEN c.worker_id IS NOT NULL
                          THEN greatest(c.committed, coalesce(c.attempt_offset - 1, c.committed)) + 1
                     END AS charge) e) x
    WHERE c.partition_id = $1 AND c.consumer_group = $2
      AND q.tenant = $8 AND q.name = $9
      AND (c.worker_id IS NULL OR c.lease_expires_at < now())
      AND (x.charge IS NULL OR x.charged <= q.retry_limit)
      AND (c.retry_at IS NULL OR c.retry_at <= now())
      AND p.last_offset > c.committed
      AND coalesce(q.delayed_processing, 0) = 0
      AND coalesce(q.ttl_seconds, 0) = 0 AND coalesce(q.max_wait_time_seconds, 0) = 0
      AND ($7 OR coalesce(q.window_buffer, 0) = 0)
      AND NOT EXISTS (SELECT 1 FROM queen.consumer_groups_metadata m
                      WHERE m.queue_id = q.id AND m.consumer_group = $2 AND m.conflation)
    FOR UPDATE OF c SKIP LOCKED
), first AS (
    SELECT claim.*, s.base_offset AS first_base,
           greatest(claim.committed + 1, s.base_offset) AS first_off,
           greatest(claim.committed + 1, s.base_offset) + $4::integer - 1 AS cap
    FROM claim CROSS JOIN LATERAL (
        SELECT x.base_offset FROM queen.log_segments x
        WHERE x.partition_id = claim.partition_id
          AND x.base_offset >= coalesce(
              (SELECT y.base_offset FROM queen.log_segments y
               WHERE y.partition_id = claim.partition_id AND y.base_offset <= claim.committed + 1
               ORDER BY y.base_offset DESC LIMIT 1), -1)
          AND x.end_offset > claim.committed
        ORDER BY x.base_offset LIMIT 1) s
), segs AS (
    SELECT s.base_offset, s.end_offset, s.msg_count, s.created_at, s.codec, s.producer, s.blob,
           s.txn_hashes, s.txn_keys_hi, s.txn_keys_lo,
           greatest(s.base_offset, f.first_off) AS from_off, least(s.end_offset, f.cap) AS to_off
    FROM first f JOIN queen.log_segments s
      ON s.partition_id = f.partition_id
     AND s.base_offset >= f.first_base AND s.base_offset <= f.cap
), span AS (
    SELECT max(to_off) AS claim_end FROM segs
), upd AS (
    UPDATE queen.log_consumers c SET
        committed = CASE WHEN $6 THEN span.claim_end ELSE c.committed END,
        total_consumed = CASE WHEN $6 THEN c.total_consumed + (span.claim_end - c.committed)
                              ELSE c.total_consumed END,
        last_consumed_at = CASE WHEN $6 THEN now() ELSE c.last_consumed_at END,
        worker_id = CASE WHEN $6 THEN NULL ELSE $3 END,
        lease_expires_at = CASE WHEN $6 THEN NULL
                                ELSE now() + make_interval(secs => f.lease_seconds) END,
        lease_acquired_at = CASE WHEN $6 THEN NULL ELSE now() END,
        batch_end = CASE WHEN $6 THEN NULL ELSE span.claim_end END,
        acked_ahead = '{}',
        failed_offset = CASE WHEN f.charge IS NULL THEN c.failed_offset ELSE f.charge END,
        failed_count = CASE WHEN f.charge IS NULL THEN c.failed_count ELSE f.charged END,
        attempt_count = CASE WHEN $6 THEN c.attempt_count
                             WHEN c.attempt_offset IS NOT DISTINCT FROM f.first_off
                             THEN c.attempt_count + 1 ELSE 1 END,
        attempt_offset = CASE WHEN $6 THEN c.attempt_offset ELSE f.first_off END
    FROM first f, span
    WHERE c.partition_id = f.partition_id AND c.consumer_group = $2
      AND span.claim_end IS NOT NULL
    RETURNING CASE WHEN $6 THEN 1 ELSE c.attempt_count END AS attempt, span.claim_end,
              set_config('synchronous_commit',
                         CASE WHEN $6 THEN current_setting('synchronous_commit') ELSE 'off' END,
                         true) AS durability
)
SELECT f.queue_name, f.partition_name, f.partition_id, u.attempt, f.first_off, u.claim_end,
       s.base_offset, (s.from_off - s.base_offset)::integer, (s.to_off - s.from_off + 1)::integer,
       s.msg_count, s.created_at, s.codec, s.producer, s.blob,
       greatest(f.last_offset - u.claim_end, 0), f.lease_seconds, u.durability,
       s.txn_keys_hi[s.from_off - s.base_offset + 1 : s.to_off - s.base_offset + 1],
       s.txn_keys_lo[s.from_off - s.base_offset + 1 : s.to_off - s.base_offset + 1],
       s.txn_hashes[s.from_off - s.base_offset + 1 : s.to_off - s.base_offset + 1]
FROM upd u, first f, segs s
ORDER BY s.base_offset";

/// What one single-statement claim took.
#[derive(Debug)]
pub struct SingleClaim {
    /// The claimed slices, in offset order.
    pub slices: Vec<ClaimedSlice>,
    /// Messages left in the partition beyond the claim.
    pub pending_after: i64,
    /// When the lease ends (`None` with auto-ack).
    pub lease_until: Option<DateTime<Utc>>,
    /// The delivered messages' transaction-id keys in offset order; `None` when a
    /// segment was stored without them.
    pub keys: Option<Vec<i64>>,
}

/// Claims from `partition_id` in one statement; `None` when the case is not one it settles
/// (nothing was changed: run `log_pop_list_v2`). On the Citus layout always `None`, at
/// once: Citus refuses the statement ("complex joins are only supported when all
/// distributed tables are co-located and joined on their distribution columns").
#[tracing::instrument(skip_all, fields(db.system = "postgresql", db.operation = "pop_single_claim"))]
pub async fn try_single_claim(
    conn: &mut PgConn,
    queue: &str,
    p: &ClaimParams<'_>,
    partition_id: i64,
    skip_window: bool,
) -> Result<Option<SingleClaim>, DbError> {
    if conn.distributed() {
        return Ok(None);
    }
    let st = conn.statement("pop_single_claim", SINGLE_CLAIM).await?;
    let worker = (!p.auto_ack).then_some(p.worker);
    let rows = conn
        .client()
        .query(
            &st,
            &[
                &partition_id,
                &p.group,
                &worker,
                &p.batch,
                &p.lease_seconds,
                &p.auto_ack,
                &skip_window,
                &p.tenant,
                &queue,
            ],
        )
        .await
        .map_err(|e| DbError::query("pop_single_claim", e));
    let rows = rows.map_err(|e| conn.note(e))?;
    Ok(claimed(&rows, p.auto_ack))
}

fn claimed(rows: &[Row], auto_ack: bool) -> Option<SingleClaim> {
    let first = rows.first()?;
    let pending_after: i64 = first.get(14);
    let lease_seconds: i32 = first.get(15);
    let keys = rows
        .iter()
        .map(slice_keys)
        .try_fold(Vec::new(), |mut all, slice| {
            all.extend(slice?);
            Some(all)
        });
    Some(SingleClaim {
        slices: rows.iter().map(|row| slice(row, 0)).collect(),
        pending_after,
        lease_until: (!auto_ack).then(|| Utc::now() + Duration::seconds(i64::from(lease_seconds))),
        keys,
    })
}

/// One row's keys, from whichever column the segment holds.
fn slice_keys(row: &Row) -> Option<Vec<i64>> {
    stored_keys(row.get(17), row.get(18), row.get(19))
}
