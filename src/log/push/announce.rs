//! After a commit: the push is announced to the local group actors and, through the mesh,
//! to the peers, and the partitions' dedup windows learn what was stored. Nothing here
//! comes back to the push path.

use std::collections::BTreeMap;

use super::window::{DedupWindows, WindowKey};
use crate::actors::ring::PartitionRef;
use crate::actors::wake_gate::WakeSource;
use crate::broker::Broker;
use crate::domain::{PartitionName, PushItem, PushOutcome, PushStatus, QueueName, Tenant};

/// Tells the local group actors, and the peers through the mesh, which partitions
/// received how many messages, and extends the partitions' dedup windows. Call it only
/// after the commit that stored `outcomes`.
pub fn announce(broker: &Broker, tenant: &Tenant, items: &[PushItem], outcomes: &[PushOutcome]) {
    // Per (queue, partition): its id, its dedup window, and (offset, key) of every message
    // stored there.
    type Stored = (i64, i32, Vec<(i64, i64)>);
    let mut landed: BTreeMap<(&QueueName, &PartitionName), Stored> = BTreeMap::new();
    for (item, o) in items.iter().zip(outcomes) {
        if o.status == PushStatus::Queued {
            landed
                .entry((&item.queue, &item.partition))
                .or_insert_with(|| (o.partition_id, o.dedup_window_secs, Vec::new()))
                .2
                .push((o.offset, o.txn_key));
        }
    }
    for ((queue, partition), (id, window_secs, mut stored)) in landed {
        stored.sort_unstable_by_key(|(offset, _)| *offset);
        let messages = stored.len() as u32;
        let last_offset = stored[stored.len() - 1].0;
        remember(
            &broker.dedup,
            &WindowKey::new(tenant, queue, partition),
            id,
            window_secs,
            stored,
        );
        let partition = PartitionRef {
            id,
            name: partition.as_str().into(),
        };
        broker
            .mesh
            .push_landed(tenant, queue, &partition, last_offset, messages);
        broker
            .registry
            .push_landed(tenant, queue, partition, messages, WakeSource::Push);
    }
}

/// Adds one partition's stored messages (offset order) to its dedup window, after the
/// commit (a window holds committed ids only) and only when they are one dense run.
fn remember(
    windows: &DedupWindows,
    key: &WindowKey,
    partition_id: i64,
    window_secs: i32,
    stored: Vec<(i64, i64)>,
) {
    let previous_last = stored[0].0 - 1;
    let dense = stored
        .iter()
        .enumerate()
        .all(|(k, (offset, _))| *offset == previous_last + 1 + k as i64);
    if dense {
        windows.stored(
            key,
            partition_id,
            previous_last,
            window_secs,
            stored.into_iter().map(|(_, h)| h).collect(),
        );
    }
}
