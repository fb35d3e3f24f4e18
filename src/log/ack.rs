//! Ack: acknowledgements grouped by (partition, lease), one SQL call per group.
//!
//! Any node can ack any message: the offset is found in SQL by (partition, transaction id),
//! so nothing here depends on which node served the pop. An ack that completes every
//! message of its lease is settled by one plain statement: `db::ack::leased_span` when
//! this node served the pop and booked it ([`lease_book`]), else `db::ack::whole_lease`;
//! the `acks` metrics count how many took each path. [`stage`] applies acks inside a
//! caller's transaction (a transaction bundle), which calls [`announce`] after its commit.

use std::collections::BTreeMap;

use tracing::instrument;

use crate::actors::ring::PartitionRef;
use crate::actors::GroupKey;
use crate::broker::Broker;
use crate::db::ack::{ack_partition, AckAnswer, AckDurability, AckItem, AckTarget, AckVerdict};
use crate::db::transaction::DataTransaction;
use crate::db::DbError;
use crate::domain::{ConsumerGroup, QueueName, Tenant};
use crate::metrics::Metrics;

pub mod lease_book;

/// One acknowledgement as a client sends it.
#[derive(Debug, Clone)]
pub struct Ack {
    /// The message's partition.
    pub partition_id: i64,
    /// The message's transaction id.
    pub transaction_id: String,
    /// `completed`, `failed`, `retry` or `dlq`.
    pub status: String,
    /// Failure text of a nack.
    pub error: Option<String>,
    /// The lease the message was delivered under (empty: the partition's live lease).
    pub lease_id: String,
}

/// Applies `acks` for `group` of `tenant` and answers one verdict per ack, in order (an ack
/// naming another tenant's partition is refused as "Message not found"). A partition whose
/// lease this released while it still holds messages goes back to the group's ring at once
/// (an ack-promote), on this node and, through the mesh, on its peers, waking parked pops.
#[instrument(skip_all, fields(consumer_group = group.as_str(), batch_size = acks.len()))]
pub async fn ack(
    broker: &Broker,
    tenant: &Tenant,
    group: &ConsumerGroup,
    acks: &[Ack],
) -> Result<Vec<AckVerdict>, DbError> {
    let mut verdicts: Vec<Option<AckVerdict>> = vec![None; acks.len()];
    let mut conn = broker.db.conn().await?;
    let durability = if broker.config.pop.acks_wait(conn.distributed()) {
        AckDurability::Flushed
    } else {
        AckDurability::Relaxed
    };
    for ((partition_id, lease), indices) in by_partition_and_lease(acks) {
        let items = items_of(acks, &indices);
        let target = AckTarget {
            tenant: tenant.as_str(),
            partition_id,
            group: group.as_str(),
            lease,
            durability,
        };
        let known = (!lease.is_empty())
            .then(|| {
                broker
                    .leases
                    .take(tenant.as_str(), group.as_str(), partition_id, lease)
            })
            .flatten();
        let answer = ack_partition(&mut conn, &target, known.as_ref(), &items).await?;
        count_path(broker, &answer);
        promote(broker, tenant, group, partition_id, &answer.verdicts);
        for (i, verdict) in indices.into_iter().zip(answer.verdicts) {
            verdicts[i] = Some(verdict);
        }
    }
    Ok(verdicts
        .into_iter()
        .map(|v| v.expect("every ack belongs to one group"))
        .collect())
}

/// Applies `acks` for `group` inside a transaction the caller owns, grouped exactly as
/// [`ack`] groups them, and answers one verdict per ack, in order. Nothing is released for
/// anyone before the caller's commit; then it calls [`announce`].
pub async fn stage(
    tx: &DataTransaction<'_>,
    broker: &Broker,
    tenant: &Tenant,
    group: &ConsumerGroup,
    acks: &[Ack],
) -> Result<Vec<AckVerdict>, DbError> {
    let mut verdicts: Vec<Option<AckVerdict>> = vec![None; acks.len()];
    for ((partition_id, lease), indices) in by_partition_and_lease(acks) {
        let answer = tx
            .ack(
                tenant.as_str(),
                partition_id,
                group.as_str(),
                lease,
                &items_of(acks, &indices),
            )
            .await?;
        count_path(broker, &answer);
        for (i, verdict) in indices.into_iter().zip(answer.verdicts) {
            verdicts[i] = Some(verdict);
        }
    }
    Ok(verdicts
        .into_iter()
        .map(|v| v.expect("every ack belongs to one group"))
        .collect())
}

/// Tells the group actor of every partition whose lease `verdicts` released while it still
/// holds messages (an ack-promote). Call it only after the commit that applied them.
pub fn announce(
    broker: &Broker,
    tenant: &Tenant,
    group: &ConsumerGroup,
    acks: &[Ack],
    verdicts: &[AckVerdict],
) {
    let mut by_partition: BTreeMap<i64, Vec<AckVerdict>> = BTreeMap::new();
    for (a, v) in acks.iter().zip(verdicts) {
        by_partition
            .entry(a.partition_id)
            .or_default()
            .push(v.clone());
    }
    for (partition_id, answers) in by_partition {
        promote(broker, tenant, group, partition_id, &answers);
    }
}

fn count_path(broker: &Broker, answer: &AckAnswer) {
    if answer.known_lease {
        Metrics::bump(&broker.metrics.acks_known_lease);
    }
    Metrics::bump(if answer.whole_lease {
        &broker.metrics.acks_whole_lease
    } else {
        &broker.metrics.acks_itemized
    });
}

fn by_partition_and_lease(acks: &[Ack]) -> BTreeMap<(i64, &str), Vec<usize>> {
    let mut groups: BTreeMap<(i64, &str), Vec<usize>> = BTreeMap::new();
    for (i, a) in acks.iter().enumerate() {
        groups
            .entry((a.partition_id, a.lease_id.as_str()))
            .or_default()
            .push(i);
    }
    groups
}

fn items_of<'a>(acks: &'a [Ack], indices: &[usize]) -> Vec<AckItem<'a>> {
    indices
        .iter()
        .map(|&i| AckItem {
            transaction_id: &acks[i].transaction_id,
            offset: None,
            status: &acks[i].status,
            error: acks[i].error.as_deref(),
        })
        .collect()
}

fn promote(
    broker: &Broker,
    tenant: &Tenant,
    group: &ConsumerGroup,
    partition_id: i64,
    answers: &[AckVerdict],
) {
    let Some(released) = answers.iter().find(|v| v.lease_released) else {
        return;
    };
    let (Some(queue), Some(partition)) = (&released.queue, &released.partition) else {
        return;
    };
    if released.pending_after <= 0 {
        return;
    }
    let Ok(queue) = QueueName::parse(queue.as_str()) else {
        return;
    };
    let key = GroupKey {
        tenant: tenant.clone(),
        queue,
        group: group.clone(),
    };
    let partition = PartitionRef {
        id: partition_id,
        name: partition.as_str().into(),
    };
    // The pop may have been served by a peer, whose actor holds the partition on its wheel
    // until the old lease's expiry: tell the peers too.
    broker.mesh.ack_released(&key, &partition);
    broker.registry.ack_released(&key, partition);
}
