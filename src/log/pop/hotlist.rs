//! The database side of the group actor's plans: reseeding the ring, claiming lent
//! candidates (checking each one back in with SQL's verdict), and the legacy SQL path.
//! The plan's [`Loan`] and [`ReseedTicket`] give themselves back if this work fails or is
//! dropped, so nothing here needs a guard of its own.

use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};

use super::{Claim, Pop};
use crate::actors::group::{Deferral, Loan, PendingRef, ReseedResult, ReseedTicket, Verdict};
use crate::actors::ring::PartitionRef;
use crate::actors::GroupKey;
use crate::broker::MIN_POP_WAIT_IN_USE;
use crate::db::ack::LeasedSpan;
use crate::db::pop::single_claim::{try_single_claim, SingleClaim};
use crate::db::pop::{
    claim_list, delegated_claim, has_pending, pending_partitions, CandidateVerdict, ClaimParams,
    ClaimedSlice, PopScope,
};
use crate::db::{DbError, PgConn};
use crate::domain::QueueName;
use crate::metrics::Metrics;

/// Most partitions one reseed puts in the ring.
const RESEED_LIMIT: i32 = 4096;

/// Claims from lent candidates and checks them back in: a one-partition pop first tries
/// the single-statement claim on the first candidate (the common case), and otherwise, or
/// when that does not apply, runs `log_pop_list_v2` over them all (on the Citus layout,
/// `log_pop_at_v1` per candidate, delegated to its worker, when no group limit applies).
pub(super) async fn claim_candidates<'a>(
    pop: &Pop<'a>,
    queue: &QueueName,
    loan: Loan,
    skip_window: bool,
) -> Result<Option<Claim<'a>>, DbError> {
    let _permit = pop.broker.permit().await?;
    let mut conn = pop.claim_conn().await?;
    match claim_lent(pop, &mut conn, queue, loan, skip_window).await {
        Ok((slices, lease)) => pop.finish(conn, Ok(slices), &lease).await,
        Err(e) => pop.finish(conn, Err(e), &pop.worker).await,
    }
}

/// The statements of [`claim_candidates`], on its connection; what they claimed and the
/// lease id they granted it under.
async fn claim_lent(
    pop: &Pop<'_>,
    conn: &mut PgConn,
    queue: &QueueName,
    loan: Loan,
    skip_window: bool,
) -> Result<(Vec<ClaimedSlice>, String), DbError> {
    let ids: Vec<i64> = loan.partitions().iter().map(|p| p.id).collect();
    let params = pop.params();
    if let (1, Some(&first)) = (params.partitions, ids.first()) {
        Metrics::bump(&pop.broker.metrics.sql_single);
        let lease = pop.named_lease(first);
        let single = ClaimParams {
            worker: &lease,
            ..params.clone()
        };
        if let Some(mut claim) =
            try_single_claim(conn, queue.as_str(), &single, first, skip_window).await?
        {
            loan.check_in(verdicts(&single_claim_verdicts(&ids, &claim)));
            book(pop, first, &lease, &mut claim);
            return Ok((claim.slices, lease));
        }
    }
    Metrics::bump(&pop.broker.metrics.sql_list);
    let group_limit = pop.broker.config.limits.max_consumer_groups;
    if delegated_claim::applies(conn, params.group, group_limit) {
        let claimed =
            delegated_claim::claim_each(conn, queue.as_str(), &params, &ids, skip_window).await?;
        loan.check_in(verdicts(&claimed.verdicts));
        return Ok((claimed.slices, claimed.lease));
    }
    let (slices, found) = claim_list(conn, queue.as_str(), &params, &ids, skip_window).await?;
    loan.check_in(verdicts(&found));
    Ok((slices, pop.worker.clone()))
}

/// Books what a leased single claim took in the node's lease book, so the ack of this pop
/// through this node can skip re-reading it (see `log::ack::lease_book`).
fn book(pop: &Pop<'_>, partition_id: i64, lease: &str, claim: &mut SingleClaim) {
    let lease_for = claim
        .lease_until
        .and_then(|until| (until - Utc::now()).to_std().ok());
    let (Some(keys), Some(lease_for), Some(first)) =
        (claim.keys.take(), lease_for, claim.slices.first())
    else {
        return;
    };
    let Some(span) = LeasedSpan::of(
        first.claim_start - 1,
        first.claim_end,
        keys,
        &first.queue,
        &first.partition,
    ) else {
        return;
    };
    pop.broker.leases.record(
        pop.tenant.as_str(),
        pop.req.group.as_str(),
        partition_id,
        lease,
        span,
        lease_for,
    );
}

/// The verdicts `log_pop_list_v2` would give after claiming the first candidate with a
/// one-partition budget: claimed, and every other candidate not tried.
fn single_claim_verdicts(ids: &[i64], claim: &SingleClaim) -> Vec<CandidateVerdict> {
    ids.iter()
        .enumerate()
        .map(|(i, &partition_id)| {
            if i == 0 {
                CandidateVerdict {
                    partition_id,
                    verdict: "claimed".to_owned(),
                    retry_at: claim.lease_until,
                    pending_after: claim.pending_after,
                }
            } else {
                CandidateVerdict {
                    partition_id,
                    verdict: "skipped".to_owned(),
                    retry_at: None,
                    pending_after: 0,
                }
            }
        })
        .collect()
}

/// Refreshes the actor's ring and deferral settings from SQL; the ticket carries the
/// result back.
pub(super) async fn reseed(
    pop: &Pop<'_>,
    key: &GroupKey,
    ticket: ReseedTicket,
) -> Result<(), DbError> {
    Metrics::bump(&pop.broker.metrics.sql_reseed);
    let found = {
        let _permit = pop.broker.permit().await?;
        let mut conn = pop.broker.db.conn().await?;
        pending_partitions(
            &mut conn,
            key.tenant.as_str(),
            key.queue.as_str(),
            key.group.as_str(),
            RESEED_LIMIT,
        )
        .await?
    };
    if found.min_pop_wait_ms > 0 {
        MIN_POP_WAIT_IN_USE.store(true, std::sync::atomic::Ordering::Relaxed);
    }
    let secs = |s: i32| Duration::from_secs(u64::try_from(s).unwrap_or(0));
    let truncated = found.partitions.len() >= RESEED_LIMIT as usize;
    ticket.finish(ReseedResult {
        registered: found.registered,
        deferral: Deferral {
            window: secs(found.window_buffer),
            delay: secs(found.delayed_processing),
            min_wait: Duration::from_millis(u64::try_from(found.min_pop_wait_ms).unwrap_or(0)),
        },
        pending: found
            .partitions
            .into_iter()
            .map(|p| PendingRef {
                partition: PartitionRef {
                    id: p.id,
                    name: p.name.into(),
                },
                lease_until: p.lease_expires_at.map(instant),
                window_until: p.window_ends_at.map(instant),
            })
            .collect(),
        truncated,
    });
    Ok(())
}

/// The legacy path: targeted pops of the pushed partitions first, then the cheap
/// `log_has_pending_v1` probe (no permit), then the SQL candidate scan.
pub(super) async fn legacy<'a>(
    pop: &Pop<'a>,
    queue: &QueueName,
    hints: Vec<PartitionRef>,
) -> Result<Option<Claim<'a>>, DbError> {
    for hint in hints {
        let scope = PopScope::Specific {
            queue: queue.as_str(),
            partition: &hint.name,
        };
        if let Some(d) = pop.claim(&scope).await? {
            return Ok(Some(d));
        }
    }
    Metrics::bump(&pop.broker.metrics.sql_has_pending);
    let pending = {
        let mut conn = pop.broker.db.conn().await?;
        has_pending(
            &mut conn,
            pop.tenant.as_str(),
            queue.as_str(),
            pop.req.group.as_str(),
        )
        .await?
    };
    if !pending {
        return Ok(None);
    }
    pop.claim(&PopScope::Wildcard {
        queue: queue.as_str(),
    })
    .await
}

/// SQL's verdicts by partition id, as the actor reads them.
fn verdicts(found: &[CandidateVerdict]) -> Vec<(i64, Verdict)> {
    found.iter().map(|v| (v.partition_id, verdict(v))).collect()
}

fn verdict(v: &CandidateVerdict) -> Verdict {
    let at = || v.retry_at.map(instant).unwrap_or_else(Instant::now);
    match v.verdict.as_str() {
        "claimed" => Verdict::Claimed {
            lease_until: v.retry_at.map(instant),
            pending_after: v.pending_after,
        },
        "drained" => Verdict::Drained,
        "leased" => Verdict::Leased(at()),
        "window" => Verdict::Window(at()),
        "delayed" => Verdict::Delayed(at()),
        "skipped" => Verdict::Skipped,
        _ => Verdict::Busy,
    }
}

/// A database time as a local instant (now when it is already past).
fn instant(at: DateTime<Utc>) -> Instant {
    let ahead = (at - Utc::now()).to_std().unwrap_or(Duration::ZERO);
    Instant::now() + ahead
}
