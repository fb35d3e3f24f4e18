//! The order rule for paths that append without going through the spool: a transaction
//! bundle's pushes ([`crate::log::transaction`]) and the dead-letter retry
//! (`http/admin/dlq.rs`).
//!
//! A plain push that finds push maintenance on, or a partition with spooled records not
//! yet replayed, is spooled behind them ([`super::intake`]). These paths cannot be: a
//! bundle is atomic with its acks and its lease fence, which only the database can decide,
//! and a retry moves a dead letter. Appending directly would overtake what the spool holds
//! (the spooled push was answered first, its message would be stored second), so they are
//! refused instead, with a 503 and `Retry-After` that clients retry, and nothing changes.
//!
//! Waiting behind the spool was the other choice. It was not taken: push maintenance lasts
//! as long as the operator wants (minutes), the replay of a large spool as long as it
//! takes, and a request held that long would hold its connection, its HTTP worker slot and
//! the client's timeout, then fail anyway. A prompt retryable refusal is what brokers do
//! while a partition cannot take writes in order (Kafka answers `NOT_LEADER_OR_FOLLOWER`,
//! which its producers retry).

use crate::broker::Broker;
use crate::domain::{PartitionName, QueueName, Tenant};

/// Why a direct append must not happen now: the text the 503 carries.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Held {
    /// Push maintenance is on: pushes go to the spool, which replays them when it ends.
    #[error(
        "push maintenance is on: pushes are spooled, and this request cannot be appended \
         behind them in order; retry it when push maintenance ends"
    )]
    Maintenance,
    /// A partition has spooled records this node has not stored yet.
    #[error(
        "queue {queue} partition {partition} has spooled pushes not stored yet; retry \
         when they are"
    )]
    Spooled {
        /// The queue.
        queue: String,
        /// The partition.
        partition: String,
    },
}

/// `Err` when appending to `partitions` now, without the spool, could overtake pushes
/// the spool holds (see the module's header). One atomic load per partition list while
/// the spool is empty and push maintenance is off.
pub fn check<'a>(
    broker: &Broker,
    tenant: &Tenant,
    partitions: impl IntoIterator<Item = (&'a QueueName, &'a PartitionName)>,
) -> Result<(), Held> {
    if broker.in_push_maintenance() {
        return Err(Held::Maintenance);
    }
    let Some(spool) = broker.spool.as_deref() else {
        return Ok(());
    };
    if spool.pending_records() == 0 {
        return Ok(());
    }
    for (queue, partition) in partitions {
        if spool.holds(tenant, queue, partition) {
            return Err(Held::Spooled {
                queue: queue.to_string(),
                partition: partition.to_string(),
            });
        }
    }
    Ok(())
}
