//! The hot-list claim on the Citus layout: the lent candidates tried one at a time, each
//! through `queen.log_pop_at_v1`, which Citus delegates whole to the worker holding the
//! candidate's shard. `queen.log_pop_list_v2` runs on the coordinator there and makes each
//! of its statements a round trip to a worker; this keeps the coordinator to routing one
//! call per candidate tried (docs/scale-out.md, "The model").
//!
//! The consumer-group limit is not checked on the worker (sql/functions/log_pop_at_v1.sql),
//! so which of the two a pop takes is the caller's choice ([`applies`]).

use std::borrow::Cow;

use tokio_postgres::types::ToSql;

use super::{
    partition_lease, pop_args, slices_and_verdicts, CandidateVerdict, ClaimParams, ClaimedSlice,
    DbError, PgConn, POP_AT,
};

/// The group of queue mode, which no consumer-group limit counts.
const QUEUE_MODE: &str = "__QUEUE_MODE__";

/// Whether a hot-list pop of `group` may claim through [`claim_each`]: on the Citus layout,
/// when no consumer-group limit applies to it (`group_limit`: the broker's
/// `QUEEN_TENANT_MAX_CONSUMER_GROUPS`, `None` when unset), since only the coordinator
/// checks that limit.
pub fn applies(conn: &PgConn, group: &str, group_limit: Option<u32>) -> bool {
    conn.distributed() && (group == QUEUE_MODE || !matches!(group_limit, Some(n) if n > 0))
}

/// What [`claim_each`] claimed: the slices, one verdict per candidate in candidate order,
/// and the lease id it granted them under.
pub struct Claimed {
    /// The segment slices claimed, as `queen.log_pop_list_v2` answers them.
    pub slices: Vec<ClaimedSlice>,
    /// One verdict per candidate, in candidate order.
    pub verdicts: Vec<CandidateVerdict>,
    /// The pop's lease id, or for a one-partition leased pop the id naming the partition
    /// claimed ([`partition_lease`]): each candidate is offered its own, and the claimed
    /// one's is the lease.
    pub lease: String,
}

/// Claims for the pop `p` from `candidates` in order, one `queen.log_pop_at_v1` call per
/// candidate with the budget left, until `p.partitions` partitions were claimed or the
/// budget is spent; the rest are answered `skipped` without a call. Same rows as
/// `queen.log_pop_list_v2` over the list. A one-partition leased pop grants a lease id
/// naming its partition, as the single-statement claim of plain PostgreSQL does, so the
/// claim on the worker leaves the indexed `shared_lease` alone and its cursor update can
/// be HOT.
#[tracing::instrument(skip_all, fields(db.system = "postgresql", db.operation = "log_pop_at_v1"))]
pub async fn claim_each(
    conn: &mut PgConn,
    queue: &str,
    p: &ClaimParams<'_>,
    candidates: &[i64],
    skip_window: bool,
) -> Result<Claimed, DbError> {
    let st = conn.statement("log_pop_at_v1", POP_AT).await?;
    let named = p.partitions == 1 && !p.auto_ack;
    let mut lease = p.worker.to_owned();
    let mut budget = p.batch;
    let mut claimed = 0;
    let mut slices = Vec::new();
    let mut verdicts = Vec::with_capacity(candidates.len());
    for &candidate in candidates {
        if claimed >= p.partitions || budget <= 0 {
            verdicts.push(skipped(candidate));
            continue;
        }
        let offered = match named {
            true => Cow::Owned(partition_lease(p.worker, candidate)),
            false => Cow::Borrowed(p.worker),
        };
        let worker = (!p.auto_ack).then_some(offered.as_ref());
        let left = ClaimParams {
            batch: budget,
            ..p.clone()
        };
        let mut params = pop_args(&left, &worker);
        params.extend([&queue as &(dyn ToSql + Sync), &candidate, &skip_window]);
        let rows = conn
            .client()
            .query(&st, &params)
            .await
            .map_err(|e| DbError::query("log_pop_at_v1", e));
        let rows = rows.map_err(|e| conn.note(e))?;
        let (got, found) = slices_and_verdicts(&rows);
        let taken: i32 = got.iter().map(|s| s.take).sum();
        if taken > 0 {
            claimed += 1;
            budget -= taken;
            if named {
                lease = offered.into_owned();
            }
        }
        slices.extend(got);
        verdicts.extend(found);
    }
    Ok(Claimed {
        slices,
        verdicts,
        lease,
    })
}

/// The verdict of a candidate not tried: the pop was full first.
fn skipped(partition_id: i64) -> CandidateVerdict {
    CandidateVerdict {
        partition_id,
        verdict: "skipped".to_owned(),
        retry_at: None,
        pending_after: 0,
    }
}
