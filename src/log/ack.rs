//! Ack: acknowledgements grouped by (partition, lease), one SQL call per group.
//!
//! Any node can ack any message: the offset is found in SQL by (partition, transaction id),
//! so nothing here depends on which node served the pop.

use std::collections::BTreeMap;

use tracing::instrument;

use crate::db::ack::{ack_partition, AckItem, AckVerdict};
use crate::db::{Db, DbError};
use crate::domain::ConsumerGroup;

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

/// Applies `acks` for `group` and answers one verdict per ack, in order.
#[instrument(skip_all, fields(consumer_group = group.as_str(), batch_size = acks.len()))]
pub async fn ack(db: &Db, group: &ConsumerGroup, acks: &[Ack]) -> Result<Vec<AckVerdict>, DbError> {
    let mut groups: BTreeMap<(i64, &str), Vec<usize>> = BTreeMap::new();
    for (i, a) in acks.iter().enumerate() {
        groups
            .entry((a.partition_id, a.lease_id.as_str()))
            .or_default()
            .push(i);
    }
    let mut verdicts: Vec<Option<AckVerdict>> = vec![None; acks.len()];
    let mut conn = db.conn().await?;
    for ((partition_id, lease), indices) in groups {
        let items: Vec<AckItem> = indices
            .iter()
            .map(|&i| AckItem {
                transaction_id: acks[i].transaction_id.clone(),
                offset: None,
                status: acks[i].status.clone(),
                error: acks[i].error.clone(),
            })
            .collect();
        let answers = ack_partition(&mut conn, partition_id, group.as_str(), lease, &items).await?;
        for (i, verdict) in indices.into_iter().zip(answers) {
            verdicts[i] = Some(verdict);
        }
    }
    Ok(verdicts
        .into_iter()
        .map(|v| v.expect("every ack belongs to one group"))
        .collect())
}
