//! Staging: a push's database work. [`stage`] and [`stage_many`] append inside a
//! transaction their caller owns (a transaction bundle, a combined commit, the spool's
//! replay); [`store_committed`] commits on its own, in one round trip when it can.

use super::append::{append_alone, append_groups, Builds, Groups, Request};
use super::error::PushError;
use super::prepared::{PreparedPush, Staged};
use crate::broker::Broker;
use crate::db::transaction::DataTransaction;
use crate::db::{DbError, PgConn};
use crate::domain::{PartitionName, PushItem, PushOutcome, QueueName, Tenant};

/// Appends `items` (made ready by [`prepare`](super::prepare)) inside a transaction the
/// caller owns, which commits it and then calls [`announce`](super::announce::announce).
/// Answers one outcome per item, in order; dedup sees earlier appends of the same
/// transaction.
pub async fn stage(
    tx: &DataTransaction<'_>,
    broker: &Broker,
    tenant: &Tenant,
    items: &[PushItem],
    prepared: &PreparedPush,
    zstd_level: i32,
) -> Result<Vec<PushOutcome>, PushError> {
    if items.is_empty() {
        return Ok(Vec::new());
    }
    let mut staged = stage_many(
        tx,
        broker,
        tenant,
        &[Staged { items, prepared }],
        zstd_level,
    )
    .await?;
    Ok(staged.pop().expect("one request staged"))
}

/// [`stage`] for several requests of one tenant at once (combined pushes): one append per
/// partition for all of them, items in request order then item order, a transaction id
/// repeated across requests a duplicate of its first occurrence. Outcomes per request.
pub async fn stage_many(
    tx: &DataTransaction<'_>,
    broker: &Broker,
    tenant: &Tenant,
    requests: &[Staged<'_>],
    zstd_level: i32,
) -> Result<Vec<Vec<PushOutcome>>, PushError> {
    let groups = group_items(requests);
    let mut outcomes = no_outcomes(requests);
    let request = Request::new(broker, tenant, requests, zstd_level);
    append_groups(tx, &request, &groups, Builds::new(), &mut outcomes).await?;
    Ok(answered(outcomes))
}

/// [`stage_many`] for requests of one tenant, committed: in one round trip when none of
/// their transaction ids the dedup windows hold and their items make one new segment per
/// partition (see `append_alone`), else in a transaction of its own, which reuses
/// the segments the first attempt built.
pub async fn store_committed(
    conn: &mut PgConn,
    broker: &Broker,
    tenant: &Tenant,
    requests: &[Staged<'_>],
    zstd_level: i32,
) -> Result<Vec<Vec<PushOutcome>>, PushError> {
    let groups = group_items(requests);
    create_missing(conn, broker, tenant, groups.keys().copied()).await?;
    let mut outcomes = no_outcomes(requests);
    let request = Request::new(broker, tenant, requests, zstd_level);
    let mut builds = Builds::new();
    if append_alone(conn, &request, &groups, &mut builds, &mut outcomes).await? {
        return Ok(answered(outcomes));
    }
    let tx = DataTransaction::begin(conn).await?;
    append_groups(&tx, &request, &groups, builds, &mut outcomes).await?;
    tx.commit().await?;
    Ok(answered(outcomes))
}

/// The broker's [`KnownPartitions::create_missing`](super::directory::KnownPartitions)
/// with its default dedup window: on the Citus layout, creates the partitions this node has
/// not seen, before the push's transaction begins.
pub(super) async fn create_missing<'a>(
    conn: &mut PgConn,
    broker: &Broker,
    tenant: &Tenant,
    partitions: impl Iterator<Item = (&'a QueueName, &'a PartitionName)>,
) -> Result<(), DbError> {
    let window = broker.config.push.dedup_window_secs;
    broker
        .known_partitions
        .create_missing(conn, tenant, partitions, window)
        .await
}

/// The items of `requests` per (queue, partition), as (request, item) pairs.
fn group_items<'a>(requests: &'a [Staged<'_>]) -> Groups<'a> {
    let mut groups = Groups::new();
    for (j, request) in requests.iter().enumerate() {
        for (i, item) in request.items.iter().enumerate() {
            groups
                .entry((&item.queue, &item.partition))
                .or_default()
                .push((j, i));
        }
    }
    groups
}

/// One empty answer slot per item of each request.
fn no_outcomes(requests: &[Staged<'_>]) -> Vec<Vec<Option<PushOutcome>>> {
    requests.iter().map(|r| vec![None; r.items.len()]).collect()
}

/// The answers, once every item has one.
fn answered(outcomes: Vec<Vec<Option<PushOutcome>>>) -> Vec<Vec<PushOutcome>> {
    outcomes
        .into_iter()
        .map(|per| {
            per.into_iter()
                .map(|o| o.expect("every item gets an outcome"))
                .collect()
        })
        .collect()
}
