//! The append loop of a push: per (queue, partition) group, dedup within the request,
//! then one segment per run of items (a client's prebuilt group kept as sent when it can
//! be), rebuilt without the duplicates the partition reports until everything is stored.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};

use tracing::debug;
use uuid::Uuid;

use super::{PrebuiltSegment, PushError, PushItem, PushOutcome, PushStatus};
use crate::db::push::{AppendOutcome, SegmentAppend};
use crate::db::transaction::DataTransaction;
use crate::domain::{PartitionName, QueueName, Tenant};
use crate::segment::{Codec, NewFrame, SegmentBuilder};

/// The prebuilt segments of a request and, per item, the one it belongs to.
#[derive(Clone, Copy)]
pub(super) struct Prebuilt<'a> {
    pub(super) segments: &'a [PrebuiltSegment],
    pub(super) segment_of: &'a [Option<usize>],
}

#[allow(clippy::too_many_arguments)]
pub(super) async fn append_groups(
    tx: &DataTransaction<'_>,
    tenant: &Tenant,
    items: &[PushItem],
    message_ids: &[Uuid],
    txn_ids: &[String],
    sealed: &[Option<Vec<u8>>],
    groups: &BTreeMap<(&QueueName, &PartitionName), Vec<usize>>,
    prebuilt: Prebuilt<'_>,
    zstd_level: i32,
    outcomes: &mut [Option<PushOutcome>],
) -> Result<(), PushError> {
    for ((queue, partition), indices) in groups {
        // Dedup within the request: later repeats point at the first occurrence.
        let mut first_of: HashMap<&str, usize> = HashMap::new();
        let mut repeats: Vec<(usize, usize)> = Vec::new();
        let mut pending: Vec<usize> = Vec::new();
        for &i in indices {
            match first_of.get(txn_ids[i].as_str()) {
                Some(&first) => repeats.push((i, first)),
                None => {
                    first_of.insert(&txn_ids[i], i);
                    pending.push(i);
                }
            }
        }

        // One segment per run of items from the same prebuilt group (or one for the whole
        // group when nothing is prebuilt). A prebuilt group is stored as the client sent it
        // only when none of its items was dropped as a repeat; otherwise, and once the
        // partition reports duplicates, it is rebuilt without them (recompressed by us).
        for run in pending.chunk_by(|a, b| prebuilt.segment_of[*a] == prebuilt.segment_of[*b]) {
            let as_sent = prebuilt.segment_of[run[0]]
                .map(|s| &prebuilt.segments[s])
                .filter(|seg| seg.message_ids.len() == run.len())
                .map(|seg| seg.bytes.as_slice());
            let batch = Batch {
                queue,
                partition,
                first_of: &first_of,
            };
            append_run(
                tx,
                tenant,
                items,
                message_ids,
                txn_ids,
                sealed,
                &batch,
                run.to_vec(),
                as_sent,
                zstd_level,
                outcomes,
            )
            .await?;
        }

        for (i, first) in repeats {
            let original = outcomes[first]
                .clone()
                .expect("the first occurrence was resolved above");
            outcomes[i] = Some(PushOutcome {
                status: PushStatus::Duplicate,
                ..original
            });
        }
    }
    Ok(())
}

/// The (queue, partition) a run belongs to and its transaction ids' first occurrences.
struct Batch<'a> {
    queue: &'a QueueName,
    partition: &'a PartitionName,
    first_of: &'a HashMap<&'a str, usize>,
}

/// Appends one run of items as one segment: `as_sent` bytes first when given, rebuilt
/// without the duplicates the partition reports until everything left is stored.
#[allow(clippy::too_many_arguments)]
async fn append_run(
    tx: &DataTransaction<'_>,
    tenant: &Tenant,
    items: &[PushItem],
    message_ids: &[Uuid],
    txn_ids: &[String],
    sealed: &[Option<Vec<u8>>],
    batch: &Batch<'_>,
    mut pending: Vec<usize>,
    mut as_sent: Option<&[u8]>,
    zstd_level: i32,
    outcomes: &mut [Option<PushOutcome>],
) -> Result<(), PushError> {
    let (queue, partition) = (batch.queue, batch.partition);
    while !pending.is_empty() {
        let (bytes, codec): (Cow<'_, [u8]>, Codec) = match as_sent.take() {
            Some(bytes) => (Cow::Borrowed(bytes), Codec::Zstd),
            None => {
                let mut builder = SegmentBuilder::new();
                for &i in &pending {
                    let mut frame = NewFrame {
                        message_id: message_ids[i],
                        trace_id: items[i].trace_id,
                        transaction_id: &txn_ids[i],
                        producer: None,
                        payload: &items[i].payload,
                    };
                    let pushed = match &sealed[i] {
                        None => builder.push(&frame),
                        Some(sealed) => {
                            frame.payload = sealed;
                            builder.push_sealed(&frame)
                        }
                    };
                    pushed.map_err(|source| PushError::Frame { index: i, source })?;
                }
                let blob = builder.finish(zstd_level)?;
                (Cow::Owned(blob.bytes), blob.codec)
            }
        };
        let seg_txns: Vec<String> = pending.iter().map(|&i| txn_ids[i].clone()).collect();
        let seg_ids: Vec<Uuid> = pending.iter().map(|&i| message_ids[i]).collect();
        let outcome = tx
            .append(&SegmentAppend {
                tenant: tenant.as_str(),
                queue: queue.as_str(),
                partition: partition.as_str(),
                transaction_ids: &seg_txns,
                message_ids: &seg_ids,
                blob: &bytes,
                codec: codec.as_i16(),
                producer: None,
            })
            .await?;
        match outcome {
            AppendOutcome::Stored {
                partition_id,
                base_offset,
            } => {
                for (k, &i) in pending.iter().enumerate() {
                    outcomes[i] = Some(PushOutcome {
                        status: PushStatus::Queued,
                        transaction_id: txn_ids[i].clone(),
                        message_id: message_ids[i],
                        partition_id,
                        offset: base_offset + k as i64,
                    });
                }
                pending.clear();
            }
            AppendOutcome::Duplicates {
                partition_id,
                duplicates,
            } => {
                debug!(queue = %queue, partition = %partition, duplicates = duplicates.len(), "push met stored transaction ids");
                for dup in duplicates {
                    if let Some(&i) = batch.first_of.get(dup.transaction_id.as_str()) {
                        outcomes[i] = Some(PushOutcome {
                            status: PushStatus::Duplicate,
                            transaction_id: dup.transaction_id,
                            message_id: dup.message_id,
                            partition_id,
                            offset: dup.offset,
                        });
                    }
                }
                pending.retain(|&i| outcomes[i].is_none());
            }
        }
    }
    Ok(())
}
