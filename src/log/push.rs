//! Push: one segment per (queue, partition) of a request, all appended in one transaction.
//!
//! Transaction ids dedup within the request first (the first occurrence wins), then against
//! the partition in SQL: when `log_push_v1` reports stored duplicates, the segment is
//! rebuilt without them and appended again under the partition lock it already holds.
//! [`stage`] does the database work inside a caller's transaction (a transaction bundle);
//! [`push`] wraps it in a transaction of its own.
//!
//! A binary push with stored frames (`QPB1` flag 8) hands over [`PrebuiltSegment`]s: the
//! client's compressed groups, validated by `http::binary`, appended as they are (unless
//! their queue is encrypted: then they are rebuilt with sealed payloads).

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};

use tracing::{debug, instrument};
use uuid::Uuid;

use crate::actors::ring::PartitionRef;
use crate::actors::wake_gate::WakeSource;
use crate::broker::Broker;
use crate::db::push::{AppendOutcome, SegmentAppend};
use crate::db::transaction::DataTransaction;
use crate::db::{DbError, PgConn};
use crate::domain::{PartitionName, QueueName, Tenant};
use crate::log::encryption::seal_payloads;
use crate::segment::{BlobError, Codec, FrameError, NewFrame, SegmentBuilder};

/// One message to store.
#[derive(Debug, Clone)]
pub struct PushItem {
    /// Target queue (created when missing).
    pub queue: QueueName,
    /// Target partition (created when missing).
    pub partition: PartitionName,
    /// One JSON document.
    pub payload: Vec<u8>,
    /// Dedup key; the broker mints one (the message id's text) when absent.
    pub transaction_id: Option<String>,
    /// Trace correlation id.
    pub trace_id: Option<Uuid>,
}

/// A client-compressed group (`QPB1` flag 8): the frames of `items[first..first + n]`, with
/// the client's message ids, as one zstd frame. The caller has validated every frame, and
/// the items carry the same transaction ids, trace ids and payloads as the frames.
#[derive(Debug, Clone)]
pub struct PrebuiltSegment {
    /// Index of the group's first item.
    pub first: usize,
    /// The client-minted message ids, in frame order (kept: retries resend the same ids).
    pub message_ids: Vec<Uuid>,
    /// The zstd frame as the client sent it.
    pub bytes: Vec<u8>,
}

/// The verdict on one pushed item.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PushStatus {
    /// Stored.
    Queued,
    /// Its transaction id was already stored in the partition (or earlier in the request).
    Duplicate,
}

/// The answer for one item, in request order.
#[derive(Debug, Clone)]
pub struct PushOutcome {
    /// Stored or duplicate.
    pub status: PushStatus,
    /// The effective transaction id.
    pub transaction_id: String,
    /// The stored message's id (the existing one for a duplicate).
    pub message_id: Uuid,
    /// The partition's id.
    pub partition_id: i64,
    /// The message's offset in its partition.
    pub offset: i64,
}

/// Why a push stored nothing.
#[derive(Debug, thiserror::Error)]
pub enum PushError {
    /// The database failed; the whole push rolled back.
    #[error("push could not be stored")]
    Db(#[from] DbError),
    /// An item could not be framed (a field too long for the stored format).
    #[error("item {index} cannot be stored: {source}")]
    Frame {
        /// Position of the item in the request.
        index: usize,
        /// What is wrong with it.
        #[source]
        source: FrameError,
    },
    /// A segment could not be compressed.
    #[error("segment could not be built")]
    Blob(#[from] BlobError),
    /// The queue is encrypted but this node has no `QUEEN_ENCRYPTION_KEY`.
    #[error("queue {queue} is encrypted but this broker has no QUEEN_ENCRYPTION_KEY")]
    NoKey {
        /// The encrypted queue.
        queue: String,
    },
}

/// Stores `items` (all or nothing) and answers one outcome per item, in order. After the
/// commit, the queue's local group actors hear of every partition that received messages.
#[instrument(skip_all, fields(batch_size = items.len()))]
pub async fn push(
    broker: &Broker,
    tenant: &Tenant,
    items: &[PushItem],
    zstd_level: i32,
) -> Result<Vec<PushOutcome>, PushError> {
    push_prebuilt(broker, tenant, items, &[], zstd_level).await
}

/// [`push`], where some items come as client-compressed groups that are stored as they are
/// unless the request or the partition already holds some of their transaction ids.
pub async fn push_prebuilt(
    broker: &Broker,
    tenant: &Tenant,
    items: &[PushItem],
    prebuilt: &[PrebuiltSegment],
    zstd_level: i32,
) -> Result<Vec<PushOutcome>, PushError> {
    if items.is_empty() {
        return Ok(Vec::new());
    }
    // Sealing reads queue options on a connection of its own: before this push holds one.
    let prepared = prepare(broker, tenant, items, prebuilt.to_vec()).await?;
    let mut conn = broker.db.conn().await?;
    let outcomes = match stage_and_commit(&mut conn, tenant, items, &prepared, zstd_level).await {
        Err(PushError::Db(error)) => return Err(PushError::Db(conn.note(error))),
        result => result?,
    };
    drop(conn);
    announce(broker, tenant, items, &outcomes);
    Ok(outcomes)
}

/// A push's items made ready for [`stage`]: message ids minted (or the client's, for
/// prebuilt groups), effective transaction ids, payloads of encrypted queues sealed, and
/// which prebuilt group each item came in. Built before any pooled connection is held.
#[derive(Debug, Clone)]
pub struct PreparedPush {
    message_ids: Vec<Uuid>,
    txn_ids: Vec<String>,
    sealed: Vec<Option<Vec<u8>>>,
    prebuilt: Vec<PrebuiltSegment>,
    segment_of: Vec<Option<usize>>,
}

/// Mints ids and seals the payloads of `items` (see [`PreparedPush`]); `prebuilt` are the
/// client-compressed groups some of them came in (empty for JSON pushes).
pub async fn prepare(
    broker: &Broker,
    tenant: &Tenant,
    items: &[PushItem],
    prebuilt: Vec<PrebuiltSegment>,
) -> Result<PreparedPush, PushError> {
    let mut message_ids: Vec<Uuid> = items.iter().map(|_| Uuid::now_v7()).collect();
    // Which prebuilt segment each item belongs to, if any.
    let mut segment_of: Vec<Option<usize>> = vec![None; items.len()];
    for (s, seg) in prebuilt.iter().enumerate() {
        for (k, id) in seg.message_ids.iter().enumerate() {
            message_ids[seg.first + k] = *id;
            segment_of[seg.first + k] = Some(s);
        }
    }
    let txn_ids: Vec<String> = items
        .iter()
        .zip(&message_ids)
        .map(|(item, id)| {
            item.transaction_id
                .clone()
                .unwrap_or_else(|| id.to_string())
        })
        .collect();
    let sealed = seal_payloads(broker, tenant, items, &message_ids).await?;
    // A client's group holds plaintext frames: in an encrypted queue it must be rebuilt.
    for (i, seal) in sealed.iter().enumerate() {
        if seal.is_some() {
            segment_of[i] = None;
        }
    }
    Ok(PreparedPush {
        message_ids,
        txn_ids,
        sealed,
        prebuilt,
        segment_of,
    })
}

/// Appends `items` (made ready by [`prepare`]) inside a transaction the caller owns, which
/// commits it and then calls [`announce`]. Answers one outcome per item, in order; dedup
/// sees earlier appends of the same transaction.
pub async fn stage(
    tx: &DataTransaction<'_>,
    tenant: &Tenant,
    items: &[PushItem],
    prepared: &PreparedPush,
    zstd_level: i32,
) -> Result<Vec<PushOutcome>, PushError> {
    if items.is_empty() {
        return Ok(Vec::new());
    }
    // BTreeMap: groups are appended in (queue, partition) order, so two concurrent pushes
    // over the same partitions lock them in the same order and cannot deadlock.
    let mut groups: BTreeMap<(&QueueName, &PartitionName), Vec<usize>> = BTreeMap::new();
    for (i, item) in items.iter().enumerate() {
        groups
            .entry((&item.queue, &item.partition))
            .or_default()
            .push(i);
    }

    let mut outcomes: Vec<Option<PushOutcome>> = vec![None; items.len()];
    append_groups(
        tx,
        tenant,
        items,
        &prepared.message_ids,
        &prepared.txn_ids,
        &prepared.sealed,
        &groups,
        Prebuilt {
            segments: &prepared.prebuilt,
            segment_of: &prepared.segment_of,
        },
        zstd_level,
        &mut outcomes,
    )
    .await?;
    Ok(outcomes
        .into_iter()
        .map(|o| o.expect("every item gets an outcome"))
        .collect())
}

async fn stage_and_commit(
    conn: &mut PgConn,
    tenant: &Tenant,
    items: &[PushItem],
    prepared: &PreparedPush,
    zstd_level: i32,
) -> Result<Vec<PushOutcome>, PushError> {
    let tx = DataTransaction::begin(conn).await?;
    let outcomes = stage(&tx, tenant, items, prepared, zstd_level).await?;
    tx.commit().await?;
    Ok(outcomes)
}

/// Tells the local group actors, and the peers through the mesh, which partitions
/// received how many messages. Call it only after the commit that stored `outcomes`.
pub fn announce(broker: &Broker, tenant: &Tenant, items: &[PushItem], outcomes: &[PushOutcome]) {
    // (partition id, messages, last offset) per (queue, partition).
    let mut landed: BTreeMap<(&QueueName, &PartitionName), (i64, u32, i64)> = BTreeMap::new();
    for (item, outcome) in items.iter().zip(outcomes) {
        if outcome.status == PushStatus::Queued {
            let entry = landed.entry((&item.queue, &item.partition)).or_insert((
                outcome.partition_id,
                0,
                outcome.offset,
            ));
            entry.1 += 1;
            entry.2 = entry.2.max(outcome.offset);
        }
    }
    for ((queue, partition), (id, messages, last_offset)) in landed {
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

/// The prebuilt segments of a request and, per item, the one it belongs to.
#[derive(Clone, Copy)]
struct Prebuilt<'a> {
    segments: &'a [PrebuiltSegment],
    segment_of: &'a [Option<usize>],
}

#[allow(clippy::too_many_arguments)]
async fn append_groups(
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
