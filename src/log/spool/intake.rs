//! The push path's choice between the database and the spool.
//!
//! A push goes to the spool, and is answered `buffered`, when push maintenance is on, when
//! one of its partitions still has spooled records (so it cannot overtake them), or when
//! the database is away (the store failed with an outage, a lost or refused connection, or
//! one did a moment ago: [`super::away`]).
//! Otherwise it is stored as ever. Everything else (bad input, a full queue, a pool busy
//! with load) answers as it did without a spool. Pushes inside a transaction bundle do not
//! come here: they need the database to be atomic with their acks.

use std::collections::HashMap;
use std::sync::Arc;

use tracing::debug;
use uuid::Uuid;

use super::{Spool, SpoolError};
use crate::broker::Broker;
use crate::domain::{PrebuiltSegment, PushItem, PushOutcome, Tenant};
use crate::log::push::error::PushError;
use crate::log::push::{prepare, push_prepared};

/// How a push was accepted.
#[derive(Debug)]
pub enum Accepted {
    /// Stored in PostgreSQL: one outcome per item.
    Stored(Vec<PushOutcome>),
    /// Written to this node's spool, to be stored by the replay: per item, the
    /// transaction id and message id it will be stored under (unless a duplicate).
    Buffered(Vec<(String, Uuid)>),
}

/// Why a push was not accepted.
#[derive(Debug, thiserror::Error)]
pub enum IntakeError {
    /// The store failed (and the spool was not the answer).
    #[error(transparent)]
    Push(#[from] PushError),
    /// The spool could not take it.
    #[error(transparent)]
    Spool(#[from] SpoolError),
    /// Push maintenance is on, and this node has no spool to send pushes to.
    #[error("push maintenance is on and this node's push spool is off")]
    NoSpool,
}

/// Stores `items`, or spools them (see the module's header).
pub async fn push(
    broker: &Broker,
    tenant: &Tenant,
    items: Vec<PushItem>,
    prebuilt: Vec<PrebuiltSegment>,
    zstd_level: i32,
) -> Result<Accepted, IntakeError> {
    if items.is_empty() {
        return Ok(Accepted::Stored(Vec::new()));
    }
    let spool = broker.spool.as_deref();
    let maintenance = broker.in_push_maintenance();
    match spool {
        None if maintenance => return Err(IntakeError::NoSpool),
        Some(spool) if maintenance || spool.away.is_away() || spool.holds_any(tenant, &items) => {
            let (message_ids, txn_ids) = ids(&items, &client_ids(&prebuilt));
            return buffer(spool, tenant, &items, message_ids, txn_ids).await;
        }
        _ => {}
    }
    // A flag-8 push's client message ids, kept (16 bytes a message) in case preparing it
    // meets the outage; nothing is kept without a spool.
    let given = match spool {
        Some(_) => client_ids(&prebuilt),
        None => Vec::new(),
    };
    let prepared = match prepare(broker, tenant, &items, prebuilt).await {
        Ok(prepared) => prepared,
        Err(PushError::Db(e)) if e.is_outage() && spool.is_some() => {
            debug!(error = %e, "database unavailable; push spooled");
            let (message_ids, txn_ids) = ids(&items, &given);
            let spool = spool.expect("checked above");
            spool.away.seen();
            return buffer(spool, tenant, &items, message_ids, txn_ids).await;
        }
        Err(e) => return Err(e.into()),
    };
    let (items, prepared) = (Arc::new(items), Arc::new(prepared));
    match push_prepared(broker, tenant, items.clone(), prepared.clone(), zstd_level).await {
        Ok(outcomes) => Ok(Accepted::Stored(outcomes)),
        Err(PushError::Db(e)) if e.is_outage() && spool.is_some() => {
            // Its commit may have happened (the connection died during it): the record
            // keeps its transaction ids, so the replay then answers duplicate.
            debug!(error = %e, "database unavailable; push spooled");
            let spool = spool.expect("checked above");
            spool.away.seen();
            let message_ids = prepared.message_ids().to_vec();
            let txn_ids = prepared.transaction_ids().to_vec();
            buffer(spool, tenant, &items, message_ids, txn_ids).await
        }
        Err(e) => Err(e.into()),
    }
}

async fn buffer(
    spool: &Spool,
    tenant: &Tenant,
    items: &[PushItem],
    message_ids: Vec<Uuid>,
    txn_ids: Vec<String>,
) -> Result<Accepted, IntakeError> {
    spool.append(tenant, items, &message_ids, &txn_ids).await?;
    Ok(Accepted::Buffered(
        txn_ids.into_iter().zip(message_ids).collect(),
    ))
}

/// Message ids and effective transaction ids as `prepare` would choose them: the client's
/// ids for items of a prebuilt group, fresh ones otherwise; an item without a transaction
/// id takes its message id's text.
fn ids(items: &[PushItem], client: &[(usize, Vec<Uuid>)]) -> (Vec<Uuid>, Vec<String>) {
    let mut given: HashMap<usize, Uuid> = HashMap::new();
    for (first, ids) in client {
        for (k, id) in ids.iter().enumerate() {
            given.insert(first + k, *id);
        }
    }
    let message_ids: Vec<Uuid> = (0..items.len())
        .map(|i| given.get(&i).copied().unwrap_or_else(Uuid::now_v7))
        .collect();
    let txn_ids = items
        .iter()
        .zip(&message_ids)
        .map(|(item, id)| {
            item.transaction_id
                .clone()
                .unwrap_or_else(|| id.to_string())
        })
        .collect();
    (message_ids, txn_ids)
}

/// The message ids of a push's prebuilt groups, by the index of each group's first item.
fn client_ids(prebuilt: &[PrebuiltSegment]) -> Vec<(usize, Vec<Uuid>)> {
    prebuilt
        .iter()
        .map(|s| (s.first, s.message_ids.clone()))
        .collect()
}
