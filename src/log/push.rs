//! Push: one segment per (queue, partition) of a request, all appended in one transaction.
//!
//! Transaction ids dedup within the request first (the first occurrence wins), then against
//! the partition's dedup window ([`window`]): the ids stored within the queue's
//! `dedupWindowSeconds`, which this node keeps in memory and `queen.log_push_v3` keeps
//! honest under the partition lock. No row is written per message: each segment stores
//! its messages' transaction-id keys, which acks and admin lookups read.
//! [`stage`] does the database work inside a caller's transaction (a transaction bundle);
//! [`push`] wraps it in a transaction of its own.
//!
//! A binary push with stored frames (`QPB1` flag 8) hands over [`PrebuiltSegment`]s: the
//! client's compressed groups, validated by `http::binary`, appended as they are (unless
//! their queue is encrypted: then they are rebuilt with sealed payloads).

use std::collections::BTreeMap;
use std::sync::Arc;

use tracing::instrument;
use uuid::Uuid;

use crate::actors::ring::PartitionRef;
use crate::actors::wake_gate::WakeSource;
use crate::broker::Broker;
use crate::db::transaction::DataTransaction;
use crate::db::{DbError, PgConn};
use crate::domain::{PartitionName, QueueName, Tenant};
use crate::log::encryption::seal_payloads;
use crate::segment::{txn_key, BlobError, FrameError};

mod append;
pub mod combiner;
pub mod window;

use append::append_groups;
use append::Request;
use window::{DedupWindows, WindowKey};

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
    /// Who pushed it: the verified token's `sub` with authentication on (never the body's
    /// word), stored in the message's frame (flag 2) and shown by pops and admin views.
    pub producer: Option<std::sync::Arc<str>>,
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
    /// Not stored: the queue holds `maxSize` messages already, or would with these.
    Full {
        /// The queue's `maxSize`.
        max_size: i32,
    },
}

impl PushStatus {
    /// The `status` of the item's answer (`failed` when not stored: contract §2.1).
    pub fn wire(&self) -> &'static str {
        match self {
            PushStatus::Queued => "queued",
            PushStatus::Duplicate => "duplicate",
            PushStatus::Full { .. } => "failed",
        }
    }

    /// The item's `error` text, for an item that was not stored.
    pub fn error(&self) -> Option<String> {
        match self {
            PushStatus::Full { max_size } => Some(format!(
                "queue is full: maxSize is {max_size} messages and this push would exceed it"
            )),
            _ => None,
        }
    }
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
    /// `txn_key` of the transaction id (what the partition's dedup window holds).
    pub txn_key: i64,
    /// The queue's dedup window in seconds as the append saw it (0: off, or a duplicate).
    pub dedup_window_secs: i32,
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
    /// Other writers kept changing the partition while its dedup window was brought up to
    /// date (windows evicted under memory pressure); nothing was stored.
    #[error("push to {queue}/{partition} raced its dedup window; retry")]
    WindowRace {
        /// The queue.
        queue: String,
        /// The partition.
        partition: String,
    },
    /// The broker stopped before the push was written; nothing was stored.
    #[error("the broker is stopping")]
    Stopped,
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
    items: Vec<PushItem>,
    zstd_level: i32,
) -> Result<Vec<PushOutcome>, PushError> {
    push_prebuilt(broker, tenant, items, Vec::new(), zstd_level).await
}

/// [`push`], where some items come as client-compressed groups that are stored as they are
/// unless the request or the partition already holds some of their transaction ids.
/// With combining on (`QUEEN_PUSH_WRITERS` above 0), the push is handed to the
/// [`combiner`] and shares its commit with the pushes that arrive with it.
pub async fn push_prebuilt(
    broker: &Broker,
    tenant: &Tenant,
    items: Vec<PushItem>,
    prebuilt: Vec<PrebuiltSegment>,
    zstd_level: i32,
) -> Result<Vec<PushOutcome>, PushError> {
    if items.is_empty() {
        return Ok(Vec::new());
    }
    // Sealing reads queue options on a connection of its own: before this push holds one.
    let prepared = prepare(broker, tenant, &items, prebuilt).await?;
    push_prepared(
        broker,
        tenant,
        Arc::new(items),
        Arc::new(prepared),
        zstd_level,
    )
    .await
}

/// Stores a push [`prepare`] made ready. Items and preparation are shared, not moved, so a
/// caller that must do something else with them when the store fails (the push spool
/// writes them to disk) still has them, at the cost of two reference counts per request.
///
/// A push that stored nothing because it met a concurrent queue delete (a deadlock with
/// it, or the queue row gone when the push created a partition) is tried again, at most
/// [`PUSH_ATTEMPTS`] times in all, each after a slightly longer pause so it does not meet
/// the same delete again: it then creates the queue afresh, as a push after the
/// delete would.
pub async fn push_prepared(
    broker: &Broker,
    tenant: &Tenant,
    items: Arc<Vec<PushItem>>,
    prepared: Arc<PreparedPush>,
    zstd_level: i32,
) -> Result<Vec<PushOutcome>, PushError> {
    let mut attempt = 1;
    loop {
        let result = push_once(broker, tenant, items.clone(), prepared.clone(), zstd_level).await;
        match result {
            Err(PushError::Db(e)) if e.lost_to_a_queue_delete() && attempt < PUSH_ATTEMPTS => {
                tokio::time::sleep(PUSH_RETRY_PAUSE * attempt).await;
                attempt += 1;
            }
            result => return result,
        }
    }
}

/// How many times a push that met a concurrent queue delete is tried in all.
pub const PUSH_ATTEMPTS: u32 = 10;

/// The pause before a push's second try; the n-th retry waits n times as long (all nine
/// retries together: under half a second).
pub const PUSH_RETRY_PAUSE: std::time::Duration = std::time::Duration::from_millis(10);

/// One try of [`push_prepared`].
async fn push_once(
    broker: &Broker,
    tenant: &Tenant,
    items: Arc<Vec<PushItem>>,
    prepared: Arc<PreparedPush>,
    zstd_level: i32,
) -> Result<Vec<PushOutcome>, PushError> {
    if items.is_empty() {
        return Ok(Vec::new());
    }
    let (items, prepared) = match broker.push_combiner.submit(tenant, items, prepared).await {
        Ok(reply) => return reply,
        Err(back) => back,
    };
    let mut conn = broker.db.conn().await?;
    let outcomes =
        match stage_and_commit(&mut conn, broker, tenant, &items, &prepared, zstd_level).await {
            Err(PushError::Db(error)) => return Err(PushError::Db(conn.note(error))),
            result => result?,
        };
    drop(conn);
    announce(broker, tenant, &items, &outcomes);
    Ok(outcomes)
}

/// A push's items made ready for [`stage`]: message ids minted (or the client's, for
/// prebuilt groups), effective transaction ids, payloads of encrypted queues sealed, and
/// which prebuilt group each item came in. Built before any pooled connection is held.
#[derive(Debug, Clone)]
pub struct PreparedPush {
    message_ids: Vec<Uuid>,
    txn_ids: Vec<String>,
    keys: Vec<i64>,
    sealed: Vec<Option<Vec<u8>>>,
    prebuilt: Vec<PrebuiltSegment>,
    segment_of: Vec<Option<usize>>,
}

impl PreparedPush {
    /// Each item's message id, in request order.
    pub fn message_ids(&self) -> &[Uuid] {
        &self.message_ids
    }

    /// Each item's effective transaction id (the given one, or its message id's text).
    pub fn transaction_ids(&self) -> &[String] {
        &self.txn_ids
    }
}

/// Mints ids and seals the payloads of `items` (see [`PreparedPush`]); `prebuilt` are the
/// client-compressed groups some of them came in (empty for JSON pushes).
pub async fn prepare(
    broker: &Broker,
    tenant: &Tenant,
    items: &[PushItem],
    prebuilt: Vec<PrebuiltSegment>,
) -> Result<PreparedPush, PushError> {
    let message_ids: Vec<Uuid> = items.iter().map(|_| Uuid::now_v7()).collect();
    prepare_with_ids(broker, tenant, items, prebuilt, message_ids).await
}

/// [`prepare`] with the message ids given, one per item (a replayed spool record keeps
/// the ids its push was answered with); prebuilt groups still bring their own.
pub async fn prepare_with_ids(
    broker: &Broker,
    tenant: &Tenant,
    items: &[PushItem],
    prebuilt: Vec<PrebuiltSegment>,
    mut message_ids: Vec<Uuid>,
) -> Result<PreparedPush, PushError> {
    debug_assert_eq!(message_ids.len(), items.len());
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
    let keys = txn_ids.iter().map(|t| txn_key(t)).collect();
    let sealed = seal_payloads(broker, tenant, items, &message_ids).await?;
    // A client's group holds plaintext frames without a producer: in an encrypted queue,
    // or under a stamped producer, it must be rebuilt.
    for (i, seal) in sealed.iter().enumerate() {
        if seal.is_some() || items[i].producer.is_some() {
            segment_of[i] = None;
        }
    }
    Ok(PreparedPush {
        message_ids,
        txn_ids,
        keys,
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

/// One request's part of [`stage_many`]: its items and what [`prepare`] made of them.
#[derive(Clone, Copy)]
pub struct Staged<'a> {
    /// The items, in request order.
    pub items: &'a [PushItem],
    /// Their preparation.
    pub prepared: &'a PreparedPush,
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
    append_groups(tx, &request, &groups, append::Builds::new(), &mut outcomes).await?;
    Ok(answered(outcomes))
}

/// [`stage_many`] for requests of one tenant, committed: in one round trip when none of
/// their transaction ids the dedup windows hold and their items make one new segment per
/// partition (see `append::append_alone`), else in a transaction of its own, which reuses
/// the segments the first attempt built.
pub async fn store_committed(
    conn: &mut PgConn,
    broker: &Broker,
    tenant: &Tenant,
    requests: &[Staged<'_>],
    zstd_level: i32,
) -> Result<Vec<Vec<PushOutcome>>, PushError> {
    let groups = group_items(requests);
    let mut outcomes = no_outcomes(requests);
    let request = Request::new(broker, tenant, requests, zstd_level);
    let mut builds = append::Builds::new();
    if append::append_alone(conn, &request, &groups, &mut builds, &mut outcomes).await? {
        return Ok(answered(outcomes));
    }
    let tx = DataTransaction::begin(conn).await?;
    append_groups(&tx, &request, &groups, builds, &mut outcomes).await?;
    tx.commit().await?;
    Ok(answered(outcomes))
}

/// The items of `requests` per (queue, partition), as (request, item) pairs.
fn group_items<'a>(requests: &'a [Staged<'_>]) -> append::Groups<'a> {
    let mut groups = append::Groups::new();
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

async fn stage_and_commit(
    conn: &mut PgConn,
    broker: &Broker,
    tenant: &Tenant,
    items: &[PushItem],
    prepared: &PreparedPush,
    zstd_level: i32,
) -> Result<Vec<PushOutcome>, PushError> {
    let staged = [Staged { items, prepared }];
    let mut stored = store_committed(conn, broker, tenant, &staged, zstd_level).await?;
    Ok(stored.pop().expect("one request stored"))
}

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
