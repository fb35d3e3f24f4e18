//! Leased deliveries this node cannot render: which messages they are, and giving them back
//! so that no partition waits for a lease that delivered nothing, or redelivers forever.
//!
//! A message cannot be rendered when its segment does not decompress or parse (damaged: no
//! node can read it) or when its payload is sealed under a key this node does not hold
//! (only this node: a node with the right key can). Per claimed partition, the first such
//! message decides: the lease is cut to the messages before it, which are answered; when it
//! is the first message delivered, the lease is released at once, and a damaged one is
//! dead-lettered once the deliveries charged at it pass the queue's `retryLimit`
//! (`queen.log_render_failed_v1`). Auto-ack pops never get here: their claim is rolled back
//! (see [`super::Claim`]). Rendering the answer itself is the HTTP layer's.

use crate::actors::ring::PartitionRef;
use crate::actors::GroupKey;
use crate::broker::Broker;
use crate::db::pop::render_failed::{render_failed, RenderFailure};
use crate::db::DbError;
use crate::domain::{ConsumerGroup, QueueName, Tenant};
use crate::segment::frame::FLAG_ENCRYPTED;
use crate::segment::{open_blob, slice_frames, Codec, PayloadKey, SealError};

use super::Delivery;

/// The first messages of one claimed partition that cannot be rendered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unrenderable {
    /// The partition.
    pub partition_id: i64,
    /// The first offset that cannot be rendered.
    pub from: i64,
    /// The last offset of the damaged slice, or `from` for one sealed payload.
    pub to: i64,
    /// No node can read it.
    pub damaged: bool,
    /// Why, for the log and for a dead letter.
    pub error: String,
}

/// The first unrenderable message of each claimed partition, in delivery order.
pub fn find(delivery: &Delivery, key: Option<&PayloadKey>) -> Vec<Unrenderable> {
    let mut found: Vec<Unrenderable> = Vec::new();
    for slice in &delivery.slices {
        if found.iter().any(|u| u.partition_id == slice.partition_id) {
            continue;
        }
        let first = slice.base_offset + i64::from(slice.start_idx);
        let bad = |from: i64, to: i64, damaged: bool, error: String| Unrenderable {
            partition_id: slice.partition_id,
            from,
            to,
            damaged,
            error,
        };
        let raw = Codec::from_i16(slice.codec).and_then(|codec| open_blob(codec, &slice.blob));
        let raw = match raw {
            Ok(raw) => raw,
            Err(e) => {
                let last = first + i64::from(slice.take) - 1;
                found.push(bad(first, last, true, format!("damaged segment: {e}")));
                continue;
            }
        };
        let frames = match slice_frames(&raw, slice.start_idx as usize, slice.take as usize) {
            Ok(frames) => frames,
            Err(e) => {
                let last = first + i64::from(slice.take) - 1;
                found.push(bad(first, last, true, format!("damaged segment: {e}")));
                continue;
            }
        };
        for (k, frame) in frames.iter().enumerate() {
            if frame.flags & FLAG_ENCRYPTED == 0 {
                continue;
            }
            let opened = key
                .ok_or(SealError::Unopenable)
                .and_then(|key| key.open(&frame.message_id, frame.payload).map(|_| ()));
            if let Err(e) = opened {
                let at = first + k as i64;
                found.push(bad(at, at, false, e.to_string()));
                break;
            }
        }
    }
    found
}

/// Gives `bad` back for `group` (see the module header) and returns what of `delivery`
/// can still be answered: every partition's slices before its first unrenderable message.
/// A partition whose lease was released goes back to the group's ring at once, as after
/// an ack that releases a lease.
pub async fn give_back(
    broker: &Broker,
    tenant: &Tenant,
    group: &ConsumerGroup,
    mut delivery: Delivery,
    bad: &[Unrenderable],
) -> Result<Delivery, DbError> {
    let mut conn = broker.db.conn().await?;
    for u in bad {
        let outcome = render_failed(
            &mut conn,
            &RenderFailure {
                partition_id: u.partition_id,
                group: group.as_str(),
                lease: &delivery.lease_id,
                from: u.from,
                to: u.to,
                damaged: u.damaged,
                error: &u.error,
            },
        )
        .await?;
        if outcome == "released" || outcome == "dead_lettered" {
            back_to_ring(broker, tenant, group, &delivery, u.partition_id);
        }
        tracing::error!(
            partition_id = u.partition_id,
            offset = u.from,
            consumer_group = group.as_str(),
            outcome = outcome.as_str(),
            error = u.error.as_str(),
            "a claimed message cannot be rendered"
        );
    }
    cut(&mut delivery, bad);
    Ok(delivery)
}

fn back_to_ring(
    broker: &Broker,
    tenant: &Tenant,
    group: &ConsumerGroup,
    delivery: &Delivery,
    partition_id: i64,
) {
    let Some(slice) = delivery
        .slices
        .iter()
        .find(|s| s.partition_id == partition_id)
    else {
        return;
    };
    let Ok(queue) = QueueName::parse(slice.queue.as_str()) else {
        return;
    };
    let key = GroupKey {
        tenant: tenant.clone(),
        queue,
        group: group.clone(),
    };
    let partition = PartitionRef {
        id: partition_id,
        name: slice.partition.as_str().into(),
    };
    broker.registry.ack_released(&key, partition);
}

/// Drops from `delivery` every message at or after its partition's unrenderable one.
fn cut(delivery: &mut Delivery, bad: &[Unrenderable]) {
    delivery.slices.retain_mut(|s| {
        let Some(u) = bad.iter().find(|u| u.partition_id == s.partition_id) else {
            return true;
        };
        let first = s.base_offset + i64::from(s.start_idx);
        if first >= u.from {
            return false;
        }
        let keep = i32::try_from(u.from - first).unwrap_or(i32::MAX);
        s.take = s.take.min(keep);
        s.claim_end = s.claim_end.min(u.from - 1);
        true
    });
}

#[cfg(test)]
mod tests {
    use chrono::Utc;

    use super::*;
    use crate::db::pop::ClaimedSlice;

    fn slice(partition_id: i64, base: i64, take: i32) -> ClaimedSlice {
        ClaimedSlice {
            queue: "q".into(),
            partition: "p".into(),
            partition_id,
            delivery_attempt: 1,
            claim_start: 0,
            claim_end: 9,
            base_offset: base,
            start_idx: 0,
            take,
            msg_count: take,
            created_at: Utc::now(),
            codec: 1,
            producer: None,
            blob: Vec::new(),
        }
    }

    #[test]
    fn a_cut_keeps_each_partitions_messages_before_its_first_unrenderable_one() {
        let mut d = Delivery {
            lease_id: "l".into(),
            slices: vec![slice(1, 0, 4), slice(1, 4, 4), slice(2, 0, 3)],
        };
        let bad = Unrenderable {
            partition_id: 1,
            from: 2,
            to: 3,
            damaged: true,
            error: String::new(),
        };

        cut(&mut d, &[bad]);

        let kept: Vec<(i64, i64, i32, i64)> = d
            .slices
            .iter()
            .map(|s| (s.partition_id, s.base_offset, s.take, s.claim_end))
            .collect();
        assert_eq!(kept, vec![(1, 0, 2, 1), (2, 0, 3, 9)]);
    }

    #[test]
    fn a_slice_that_does_not_decompress_is_damaged_through_its_end() {
        let mut s = slice(7, 10, 3);
        s.blob = b"not zstd".to_vec();
        let d = Delivery {
            lease_id: "l".into(),
            slices: vec![s],
        };

        let found = find(&d, None);

        assert_eq!(found.len(), 1);
        assert_eq!(
            (found[0].from, found[0].to, found[0].damaged),
            (10, 12, true)
        );
    }
}
