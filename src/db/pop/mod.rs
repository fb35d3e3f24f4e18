//! Claiming: the wrappers of `queen.log_pop_wildcard_bin_v2`, `queen.log_pop_specific_v2`,
//! `queen.log_pop_discover_wire_v2`, `queen.log_pop_list_v2` and `queen.log_has_pending_v1`
//! (`queen.log_pop_at_v1`, the Citus layout's claim of one candidate, in [`delegated_claim`]).
//!
//! Each pop is one statement (its own transaction). The rows are segment slices; turning
//! them into messages is the pop path's business, not this module's.

use chrono::{DateTime, Utc};
use tokio_postgres::types::ToSql;

use super::{DbError, PgConn};

pub mod delegated_claim;
pub mod render_failed;
pub mod single_claim;

/// The lease id a one-partition claim grants: the pop's lease id `worker` naming the
/// partition, `<uuid>.<partition id>` (`queen.lease_partition` reads it back). PostgreSQL
/// then finds the lease's row by its primary key, and the claim writes no indexed column,
/// so its update of the cursor row can be HOT (sql/functions/lease_holders_v1.sql).
pub fn partition_lease(worker: &str, partition_id: i64) -> String {
    format!("{worker}.{partition_id}")
}

/// What a pop is asked (`queen.log_pop_args`), from the parameters `$1`..`$9` in the order
/// [`pop_args`] binds them; each entry point's own arguments follow as `$10` on.
macro_rules! pop_args {
    () => {
        "ROW($1::text, $2::text, $3::text, $4::integer, $5::integer, $6::integer, \
         $7::boolean, $8::text, $9::timestamptz)::queen.log_pop_args"
    };
}

/// The columns of `queen.log_pop_wire_row`, as [`slice`] reads them.
macro_rules! slice_columns {
    () => {
        "queue_name, partition_name, partition_id, delivery_attempt, claim_start, claim_end, \
         base_offset, start_idx, take, msg_count, created_at, codec, producer, blob"
    };
}

const POP_WILDCARD: &str = concat!(
    "SELECT ",
    slice_columns!(),
    " FROM queen.log_pop_wildcard_bin_v2(",
    pop_args!(),
    ", $10)"
);
const POP_SPECIFIC: &str = concat!(
    "SELECT ",
    slice_columns!(),
    " FROM queen.log_pop_specific_v2(",
    pop_args!(),
    ", $10, $11)"
);
const POP_DISCOVER: &str = concat!(
    "SELECT ",
    slice_columns!(),
    " FROM queen.log_pop_discover_wire_v2(",
    pop_args!(),
    ", $10, $11)"
);
const HAS_PENDING: &str = "SELECT queen.log_has_pending_v1($1, $2, $3)";
const POP_LIST: &str = concat!(
    "SELECT verdict, retry_at, pending_after, (slice).* FROM queen.log_pop_list_v2(",
    pop_args!(),
    ", $10, $11, $12)"
);
/// The claim of one candidate on the Citus layout ([`delegated_claim`]): a bare call, which
/// Citus delegates to the worker holding the partition (`$11`).
const POP_AT: &str = concat!(
    "SELECT verdict, retry_at, pending_after, (slice).* FROM queen.log_pop_at_v1(",
    pop_args!(),
    ", $10, $11, $12)"
);
const PENDING: &str = "SELECT registered, window_buffer, delayed_processing, min_pop_wait_time, \
     partition_id, partition_name, lease_expires_at, window_ends_at \
     FROM queen.log_pending_partitions_v1($1, $2, $3, $4)";

/// Which partitions a pop may claim from.
#[derive(Debug, Clone)]
pub enum PopScope<'a> {
    /// Any partition of one queue.
    Wildcard {
        /// The queue.
        queue: &'a str,
    },
    /// One named partition.
    Specific {
        /// The queue.
        queue: &'a str,
        /// The partition.
        partition: &'a str,
    },
    /// Any queue matching a namespace and/or task (at least one is set).
    Discover {
        /// Namespace filter.
        namespace: Option<&'a str>,
        /// Task filter.
        task: Option<&'a str>,
    },
}

/// The knobs of one claim.
#[derive(Debug, Clone)]
pub struct ClaimParams<'a> {
    /// Tenant of the queues.
    pub tenant: &'a str,
    /// Consumer group (`__QUEUE_MODE__` for queue mode).
    pub group: &'a str,
    /// The lease id (worker id) of a leased pop; empty with auto-ack.
    pub worker: &'a str,
    /// Global message budget.
    pub batch: i32,
    /// Maximum partitions to claim (wildcard and discover).
    pub partitions: i32,
    /// Lease length override; `None` uses the queue's lease_time (60 s when unset).
    pub lease_seconds: Option<i32>,
    /// Commit on delivery instead of leasing.
    pub auto_ack: bool,
    /// `new` (skip existing backlog) or `all`, for a group's first contact.
    pub subscription_mode: &'a str,
    /// A start time for a group's first contact; wins over the mode.
    pub subscription_from: Option<DateTime<Utc>>,
}

/// One segment slice of a claim, as PostgreSQL returns it.
#[derive(Debug, Clone)]
pub struct ClaimedSlice {
    /// Queue of the partition.
    pub queue: String,
    /// Partition name.
    pub partition: String,
    /// Partition id.
    pub partition_id: i64,
    /// 1 on the first delivery of this start offset, +1 per redelivery.
    pub delivery_attempt: i32,
    /// First offset delivered from this partition.
    pub claim_start: i64,
    /// Last offset delivered from this partition (the lease's batch_end).
    pub claim_end: i64,
    /// Segment's first offset.
    pub base_offset: i64,
    /// Index of the first delivered frame in the segment.
    pub start_idx: i32,
    /// Number of frames delivered from this segment.
    pub take: i32,
    /// Frames in the segment.
    pub msg_count: i32,
    /// When the segment was stored.
    pub created_at: DateTime<Utc>,
    /// Codec byte of the blob.
    pub codec: i16,
    /// Producer stamped on the segment.
    pub producer: Option<String>,
    /// The stored bytes.
    pub blob: Vec<u8>,
}

/// Runs one claim and returns its segment slices (empty: nothing claimed).
#[tracing::instrument(skip_all, fields(db.system = "postgresql", db.operation = tracing::field::Empty))]
pub async fn claim(
    conn: &mut PgConn,
    scope: &PopScope<'_>,
    p: &ClaimParams<'_>,
) -> Result<Vec<ClaimedSlice>, DbError> {
    let worker = (!p.auto_ack).then_some(p.worker);
    let mut params = pop_args(p, &worker);
    let (op, sql): (&'static str, &'static str) = match scope {
        PopScope::Wildcard { queue } => {
            params.push(queue);
            ("log_pop_wildcard_bin_v2", POP_WILDCARD)
        }
        PopScope::Specific { queue, partition } => {
            params.extend([queue as &(dyn ToSql + Sync), partition]);
            ("log_pop_specific_v2", POP_SPECIFIC)
        }
        PopScope::Discover { namespace, task } => {
            params.extend([namespace as &(dyn ToSql + Sync), task]);
            ("log_pop_discover_wire_v2", POP_DISCOVER)
        }
    };
    tracing::Span::current().record("db.operation", op);
    let st = conn.statement(op, sql).await?;
    let rows = conn
        .client()
        .query(&st, &params)
        .await
        .map_err(|e| DbError::query(op, e));
    let rows = rows.map_err(|e| conn.note(e))?;
    Ok(rows.iter().map(|row| slice(row, 0)).collect())
}

/// Binds a pop's [`ClaimParams`] as the parameters `$1`..`$9` of [`pop_args!`]; `worker` is
/// the lease id, `None` with auto-ack.
fn pop_args<'p>(p: &'p ClaimParams<'_>, worker: &'p Option<&str>) -> Vec<&'p (dyn ToSql + Sync)> {
    vec![
        &p.tenant,
        &p.group,
        worker,
        &p.batch,
        &p.partitions,
        &p.lease_seconds,
        &p.auto_ack,
        &p.subscription_mode,
        &p.subscription_from,
    ]
}

/// Reads the fourteen slice columns starting at column `at` (queue_name).
fn slice(row: &tokio_postgres::Row, at: usize) -> ClaimedSlice {
    ClaimedSlice {
        queue: row.get(at),
        partition: row.get(at + 1),
        partition_id: row.get(at + 2),
        delivery_attempt: row.get(at + 3),
        claim_start: row.get(at + 4),
        claim_end: row.get(at + 5),
        base_offset: row.get(at + 6),
        start_idx: row.get(at + 7),
        take: row.get(at + 8),
        msg_count: row.get(at + 9),
        created_at: row.get(at + 10),
        codec: row.get(at + 11),
        producer: row.get(at + 12),
        blob: row.get(at + 13),
    }
}

/// `queen.log_has_pending_v1`: false means definitively nothing to deliver to the group.
#[tracing::instrument(skip_all, fields(db.system = "postgresql", db.operation = "log_has_pending_v1"))]
pub async fn has_pending(
    conn: &mut PgConn,
    tenant: &str,
    queue: &str,
    group: &str,
) -> Result<bool, DbError> {
    let st = conn.statement("log_has_pending_v1", HAS_PENDING).await?;
    let row = conn
        .client()
        .query_one(&st, &[&tenant, &queue, &group])
        .await
        .map_err(|e| DbError::query("log_has_pending_v1", e));
    let row = row.map_err(|e| conn.note(e))?;
    Ok(row.get(0))
}

/// What `log_pop_list_v2` said about one candidate.
#[derive(Debug, Clone, PartialEq)]
pub struct CandidateVerdict {
    /// The candidate's id.
    pub partition_id: i64,
    /// claimed, drained, leased, window, delayed, busy or skipped.
    pub verdict: String,
    /// When to look again (lease expiry, end of a hold).
    pub retry_at: Option<DateTime<Utc>>,
    /// Messages left beyond a claim, or pending when held.
    pub pending_after: i64,
}

/// `queen.log_pop_list_v2`: claims from candidate partition ids in order; returns the
/// claimed slices and one verdict per candidate.
#[tracing::instrument(skip_all, fields(db.system = "postgresql", db.operation = "log_pop_list_v2"))]
pub async fn claim_list(
    conn: &mut PgConn,
    queue: &str,
    p: &ClaimParams<'_>,
    candidates: &[i64],
    skip_window: bool,
) -> Result<(Vec<ClaimedSlice>, Vec<CandidateVerdict>), DbError> {
    let worker = (!p.auto_ack).then_some(p.worker);
    let st = conn.statement("log_pop_list_v2", POP_LIST).await?;
    let mut params = pop_args(p, &worker);
    params.extend([&queue as &(dyn ToSql + Sync), &candidates, &skip_window]);
    let rows = conn
        .client()
        .query(&st, &params)
        .await
        .map_err(|e| DbError::query("log_pop_list_v2", e));
    let rows = rows.map_err(|e| conn.note(e))?;
    Ok(slices_and_verdicts(&rows))
}

/// Splits the rows of `log_pop_list_v2` (or of `log_pop_at_v1`, the same shape) into the
/// claimed slices and the candidates' verdicts.
fn slices_and_verdicts(rows: &[tokio_postgres::Row]) -> (Vec<ClaimedSlice>, Vec<CandidateVerdict>) {
    let mut slices = Vec::new();
    let mut verdicts = Vec::new();
    for row in rows {
        let verdict: String = row.get(0);
        if verdict == "row" {
            slices.push(slice(row, 3));
        } else {
            verdicts.push(CandidateVerdict {
                partition_id: row.get(5),
                verdict,
                retry_at: row.get(1),
                pending_after: row.get::<_, Option<i64>>(2).unwrap_or(0),
            });
        }
    }
    (slices, verdicts)
}

/// What the hot-list reseed learns from `queen.log_pending_partitions_v1`.
#[derive(Debug, Clone, Default)]
pub struct PendingPartitions {
    /// The group has met the queue (its first-contact seed exists).
    pub registered: bool,
    /// windowBuffer, seconds.
    pub window_buffer: i32,
    /// delayedProcessing, seconds.
    pub delayed_processing: i32,
    /// min_pop_wait_time, ms.
    pub min_pop_wait_ms: i32,
    /// Partitions that may hold messages.
    pub partitions: Vec<PendingPartition>,
}

/// One partition the reseed found.
#[derive(Debug, Clone)]
pub struct PendingPartition {
    /// Its id.
    pub id: i64,
    /// Its name.
    pub name: String,
    /// A live lease's expiry.
    pub lease_expires_at: Option<DateTime<Utc>>,
    /// When its windowBuffer quiet period ends (windowBuffer queues only).
    pub window_ends_at: Option<DateTime<Utc>>,
}

/// `queen.log_pending_partitions_v1`: the ring's reseed and the queue's deferral settings.
#[tracing::instrument(skip_all, fields(db.system = "postgresql", db.operation = "log_pending_partitions_v1"))]
pub async fn pending_partitions(
    conn: &mut PgConn,
    tenant: &str,
    queue: &str,
    group: &str,
    limit: i32,
) -> Result<PendingPartitions, DbError> {
    let st = conn.statement("log_pending_partitions_v1", PENDING).await?;
    let rows = conn
        .client()
        .query(&st, &[&tenant, &queue, &group, &limit])
        .await
        .map_err(|e| DbError::query("log_pending_partitions_v1", e));
    let rows = rows.map_err(|e| conn.note(e))?;
    let mut out = PendingPartitions::default();
    for row in rows {
        out.registered = row.get(0);
        out.window_buffer = row.get(1);
        out.delayed_processing = row.get(2);
        out.min_pop_wait_ms = row.get(3);
        if let Some(id) = row.get::<_, Option<i64>>(4) {
            out.partitions.push(PendingPartition {
                id,
                name: row.get(5),
                lease_expires_at: row.get(6),
                window_ends_at: row.get(7),
            });
        }
    }
    Ok(out)
}
