//! The known-lease ack: the whole-lease ack when the node that served the pop is the one
//! acking, so the statement has nothing left to prove but that the lease is still the one
//! that node granted.
//!
//! [`super::whole_lease`] proves in SQL that the acked transaction ids are exactly the
//! lease's messages, by reading every delivered segment's keys, sorting and comparing
//! them: most of its cost (queen-bench batch 100: about 86 µs a call in
//! `pg_stat_statements`, for ten messages as for a hundred). The serving node already
//! knows those keys: its claim returned them with the segments ([`LeasedSpan`], kept in
//! the lease book). When the items' sorted keys equal the book's, this statement only
//! checks that the row still holds that lease over that span (same lease id, same floor
//! and end, live, nothing acked ahead, no retry charged) and releases it exactly as the
//! whole-lease statement would. No row back means nothing changed, and the caller goes on
//! to the whole-lease statement.

use tokio_postgres::{GenericClient, Statement};

use super::super::{DbError, PgConn};

/// `$1` partition, `$2` group, `$3` lease, `$4` the span's floor (the offset before the
/// first delivered message), `$5` its end, `$6` the commit need not wait for the WAL flush.
/// One row (messages left beyond the new cursor, the synchronous_commit set) when it
/// released the lease, none otherwise.
const KNOWN_LEASE: &str = concat!(
    release_whole_lease!(),
    "FROM queen.log_partitions p
WHERE c.partition_id = $1 AND c.consumer_group = $2 AND p.id = $1
  AND c.worker_id = $3
  AND c.lease_expires_at >= now()
  AND c.acked_ahead = '{}' AND c.failed_offset IS NULL
  AND greatest(c.committed, coalesce(c.attempt_offset - 1, c.committed)) = $4
  AND c.batch_end = $5
RETURNING greatest(p.last_offset - c.committed, 0),
          set_config('synchronous_commit',
                     CASE WHEN $6 THEN 'off' ELSE current_setting('synchronous_commit') END,
                     true)"
);

/// What a node's claim leased from one partition: the span `(floor, batch_end]` and the
/// sorted, distinct transaction-id keys of its messages (one per offset), as the
/// segments hold them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeasedSpan {
    /// The offset before the first delivered message.
    pub floor: i64,
    /// The last delivered offset.
    pub batch_end: i64,
    /// The delivered messages' keys, sorted, each once.
    pub sorted_keys: Vec<i64>,
    /// The partition's queue.
    pub queue: String,
    /// The partition's name.
    pub partition: String,
}

impl LeasedSpan {
    /// The span of a claim that delivered `(floor, batch_end]` whose messages' keys are
    /// `keys` in offset order; `None` when the keys do not stand for the span one to
    /// one (a missing key, a repeated transaction id), the cases only SQL can settle.
    pub fn of(
        floor: i64,
        batch_end: i64,
        mut keys: Vec<i64>,
        queue: &str,
        partition: &str,
    ) -> Option<Self> {
        let count = usize::try_from(batch_end - floor).ok()?;
        keys.sort_unstable();
        keys.dedup();
        (count > 0 && keys.len() == count).then(|| Self {
            floor,
            batch_end,
            sorted_keys: keys,
            queue: queue.to_owned(),
            partition: partition.to_owned(),
        })
    }
}

/// Prepares (once per connection) the statement of [`try_known_lease`].
pub async fn statement(conn: &mut PgConn) -> Result<Statement, DbError> {
    conn.statement("ack_known_lease", KNOWN_LEASE).await
}

/// Releases `lease` on the partition when the row still holds it over `span`: `Some`
/// (messages left beyond the new cursor) when it did, `None` when nothing changed. The
/// caller has checked that the acked items' sorted keys are `span.sorted_keys`.
#[tracing::instrument(skip_all, fields(db.system = "postgresql", db.operation = "ack_known_lease"))]
pub async fn try_known_lease(
    client: &impl GenericClient,
    st: &Statement,
    partition_id: i64,
    group: &str,
    lease: &str,
    span: &LeasedSpan,
    relaxed: bool,
) -> Result<Option<i64>, DbError> {
    let rows = client
        .query(
            st,
            &[
                &partition_id,
                &group,
                &lease,
                &span.floor,
                &span.batch_end,
                &relaxed,
            ],
        )
        .await
        .map_err(|e| DbError::query("ack_known_lease", e))?;
    Ok(rows.first().map(|row| row.get(0)))
}

#[cfg(test)]
mod tests {
    use super::LeasedSpan;

    #[test]
    fn a_span_is_known_only_when_each_offset_has_its_own_key() {
        let span = LeasedSpan::of(9, 12, vec![30, 10, 20], "q", "p").expect("three distinct");
        assert_eq!(span.sorted_keys, vec![10, 20, 30]);
        assert!(LeasedSpan::of(9, 12, vec![10, 10, 20], "q", "p").is_none());
        assert!(LeasedSpan::of(9, 12, vec![10, 20], "q", "p").is_none());
        assert!(LeasedSpan::of(9, 9, vec![], "q", "p").is_none());
    }
}
