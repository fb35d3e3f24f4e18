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
//! A binary push with stored frames (`QPB1` flag 8) hands over `PrebuiltSegment`s: the
//! client's compressed groups, validated by `http::binary`, appended as they are (unless
//! their queue is encrypted: then they are rebuilt with sealed payloads).

use std::sync::Arc;

use tracing::instrument;
use uuid::Uuid;

use crate::broker::Broker;
use crate::db::PgConn;
use crate::domain::{PrebuiltSegment, PushItem, PushOutcome, Tenant};
use crate::segment::txn_key;

pub mod announce;
mod append;
pub mod combiner;
pub mod directory;
pub mod error;
pub mod prepared;
pub mod seal;
pub mod stage;
pub mod window;
mod writers;

use announce::announce;
use error::PushError;
use prepared::{PreparedPush, Staged};
use seal::seal_payloads;
use stage::store_committed;

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
/// delete would. So is a push that met its shard moved away on the Citus layout
/// (`DbError::is_shard_moved_away`: a rebalance switched it to another worker), which
/// the coordinator routes to the shard's new worker when sent again.
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
            Err(PushError::Db(e))
                if (e.lost_to_a_queue_delete() || e.is_shard_moved_away())
                    && attempt < PUSH_ATTEMPTS =>
            {
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
    let (items, prepared) = match writers::submit(broker, tenant, items, prepared).await {
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

/// One request stored and committed (see [`store_committed`]).
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
