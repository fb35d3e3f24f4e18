//! The whole-lease ack: one plain statement for the common ack, every delivered message of
//! a lease completed at once.
//!
//! `queen.log_ack_v2` answers every ack shape, but it is plpgsql: a dozen statements, each
//! with its executor start-up, for an ack that in most cases only moves the cursor to the
//! lease's end. This statement does exactly that, and only when it can prove the ack is
//! that case: the lease is live and unchanged since the pop (nothing acked ahead, no retry
//! charged), and the sorted, distinct transaction-id keys of the items are exactly the
//! keys the segments hold for the delivered span `(floor, batch_end]` (the floor as in
//! `log_ack_v2`: the cursor, or just before the first delivered offset after a retention
//! gap), with as many of them as the span has messages. Anything else (a partial ack, a
//! nack, an expired lease, a repeated transaction id inside the span, a segment written
//! without keys) matches no row, and the caller falls back to `log_ack_v2`, whose answers
//! are then the only ones. Keys stand for transaction ids here exactly as they do in
//! `log_ack_v2`'s offset resolution.

use tokio_postgres::{GenericClient, Row, Statement};

use super::super::{DbError, PgConn};

/// `$1` partition, `$2` group, `$3` lease (NULL: the live lease), `$4` the items' keys,
/// sorted and distinct, `$5` the commit need not wait for the WAL flush, `$6` the caller's
/// tenant (a condition on the queue row the statement joins anyway). Returns one row
/// (queue, partition, messages left beyond the new cursor, the synchronous_commit set)
/// when it applied the ack, none otherwise.
const WHOLE_LEASE: &str = concat!(
    release_whole_lease!(),
    "FROM queen.log_partitions p JOIN queen.queues q ON q.id = p.queue_id
WHERE c.partition_id = $1 AND c.consumer_group = $2 AND p.id = $1 AND q.tenant = $6
  AND c.worker_id IS NOT NULL AND ($3::text IS NULL OR c.worker_id = $3)
  AND c.lease_expires_at >= now()
  AND c.acked_ahead = '{}' AND c.failed_offset IS NULL
  AND c.batch_end - greatest(c.committed, coalesce(c.attempt_offset - 1, c.committed))
      = cardinality($4::bigint[])
  AND $4::bigint[] = (
      SELECT array_agg(DISTINCT k.h ORDER BY k.h)
      FROM queen.log_segments s
      -- The delivered part of the segment, as 1-based array positions.
      CROSS JOIN LATERAL (
          SELECT greatest(s.base_offset,
                          greatest(c.committed, coalesce(c.attempt_offset - 1, c.committed)) + 1)
                   - s.base_offset + 1 AS a,
                 least(s.end_offset, c.batch_end) - s.base_offset + 1 AS b) r
      -- Its keys, from the key columns or from an earlier broker's hashes.
      CROSS JOIN LATERAL (
          SELECT (u.hi::bigint << 16) | (u.lo::bigint & 65535)
          FROM unnest(s.txn_keys_hi[r.a : r.b], s.txn_keys_lo[r.a : r.b]) AS u (hi, lo)
          UNION ALL
          SELECT u.h >> 16 FROM unnest(s.txn_hashes[r.a : r.b]) AS u (h)) AS k (h)
      WHERE s.partition_id = $1
        AND s.base_offset <= c.batch_end
        AND s.base_offset >= coalesce(
            (SELECT x.base_offset FROM queen.log_segments x
             WHERE x.partition_id = $1
               AND x.base_offset
                   <= greatest(c.committed, coalesce(c.attempt_offset - 1, c.committed)) + 1
             ORDER BY x.base_offset DESC LIMIT 1), -1))
RETURNING q.name, p.name, greatest(p.last_offset - c.committed, 0),
          set_config('synchronous_commit',
                     CASE WHEN $5 THEN 'off' ELSE current_setting('synchronous_commit') END,
                     true)"
);

/// What a whole-lease ack tells the caller when it applied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WholeLeaseAck {
    /// The partition's queue.
    pub queue: String,
    /// The partition's name.
    pub partition: String,
    /// Messages left in the partition beyond the new cursor.
    pub pending_after: i64,
}

/// Prepares (once per connection) the whole-lease statement, for [`try_whole_lease`].
pub async fn statement(conn: &mut PgConn) -> Result<Statement, DbError> {
    conn.statement("ack_whole_lease", WHOLE_LEASE).await
}

/// The items' keys, sorted and distinct, when every item completes its message (the
/// only shape this statement settles); `None` otherwise.
pub fn eligible(statuses: &[&str], keys: &[i64]) -> Option<Vec<i64>> {
    let completes =
        |s: &str| s.eq_ignore_ascii_case("completed") || s.eq_ignore_ascii_case("success");
    if keys.is_empty() || !statuses.iter().all(|s| completes(s)) {
        return None;
    }
    let mut sorted = keys.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    Some(sorted)
}

/// What a whole-lease ack names.
#[derive(Debug, Clone, Copy)]
pub struct WholeLease<'a> {
    /// The caller's tenant: another tenant's partition matches no row.
    pub tenant: &'a str,
    /// The messages' partition.
    pub partition_id: i64,
    /// The consumer group.
    pub group: &'a str,
    /// The lease (`None`: the partition's live lease).
    pub lease: Option<&'a str>,
    /// The items' keys, sorted and distinct (see [`eligible`]).
    pub sorted_keys: &'a [i64],
    /// The commit need not wait for the WAL flush.
    pub relaxed: bool,
}

/// Runs the whole-lease statement: `Some` when it applied the ack (the lease is released
/// and the cursor is at its end), `None` when the ack is not that case and nothing changed.
#[tracing::instrument(skip_all, fields(db.system = "postgresql", db.operation = "ack_whole_lease"))]
pub async fn try_whole_lease(
    client: &impl GenericClient,
    st: &Statement,
    w: &WholeLease<'_>,
) -> Result<Option<WholeLeaseAck>, DbError> {
    let rows = client
        .query(
            st,
            &[
                &w.partition_id,
                &w.group,
                &w.lease,
                &w.sorted_keys,
                &w.relaxed,
                &w.tenant,
            ],
        )
        .await
        .map_err(|e| DbError::query("ack_whole_lease", e))?;
    Ok(rows.first().map(applied))
}

fn applied(row: &Row) -> WholeLeaseAck {
    WholeLeaseAck {
        queue: row.get(0),
        partition: row.get(1),
        pending_after: row.get(2),
    }
}
