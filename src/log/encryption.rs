//! Encrypted queues (`encryptionEnabled`): which queues seal their payloads at rest, and the
//! sealing of a push's payloads before its segments are built.
//!
//! Whether a queue is encrypted is a queue option in PostgreSQL; every push would otherwise
//! read it, so each node keeps what it read for [`REMEMBER_FOR`]. A configure on this node
//! or on a peer (through the mesh) forgets the queue at once; without the mesh, a peer's
//! change reaches this node within [`REMEMBER_FOR`].

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use uuid::Uuid;

use crate::broker::Broker;
use crate::db::{queues, DbError};
use crate::domain::{QueueName, Tenant};
use crate::log::push::{PushError, PushItem};

/// How long a node trusts what it read about a queue's encryption.
pub const REMEMBER_FOR: Duration = Duration::from_secs(5);

/// Entries kept before expired ones are pruned: a push to a queue name used once must not
/// cost memory for the life of the process.
const PRUNE_ABOVE: usize = 1024;

/// What this node read about queues' encryption, and when.
#[derive(Debug, Default)]
pub struct EncryptedQueues {
    known: Mutex<Known>,
}

#[derive(Debug, Default)]
struct Known {
    map: HashMap<(Tenant, QueueName), (bool, Instant)>,
    /// Size past which the next insert prunes (twice what survived the last prune, so the
    /// pruning costs O(1) per insert on average).
    prune_at: usize,
}

impl EncryptedQueues {
    /// True when `queue` seals its payloads (a queue that does not exist yet does not).
    pub async fn is_encrypted(
        &self,
        broker: &Broker,
        tenant: &Tenant,
        queue: &QueueName,
    ) -> Result<bool, DbError> {
        let key = (tenant.clone(), queue.clone());
        if let Some((on, at)) = self.known.lock().expect("cache lock").map.get(&key) {
            if at.elapsed() < REMEMBER_FOR {
                return Ok(*on);
            }
        }
        let mut conn = broker.db.conn().await?;
        let on = queues::encryption_enabled(&mut conn, tenant.as_str(), queue.as_str()).await?;
        let mut known = self.known.lock().expect("cache lock");
        known.map.insert(key, (on, Instant::now()));
        if known.map.len() > known.prune_at.max(PRUNE_ABOVE) {
            // Expired entries would be read again anyway: drop them, and give the map's
            // memory back once it has shrunk.
            known.map.retain(|_, (_, at)| at.elapsed() < REMEMBER_FOR);
            known.map.shrink_to_fit();
            known.prune_at = 2 * known.map.len();
        }
        Ok(on)
    }

    /// How many queues this node remembers now.
    pub fn len(&self) -> usize {
        self.known.lock().expect("cache lock").map.len()
    }

    /// True when nothing is remembered.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Drops what is known about `queue` (its configuration changed).
    pub fn forget(&self, tenant: &Tenant, queue: &QueueName) {
        self.known
            .lock()
            .expect("cache lock")
            .map
            .remove(&(tenant.clone(), queue.clone()));
    }
}

/// The sealed payload of every item bound for an encrypted queue (`None` for the others),
/// in item order.
pub async fn seal_payloads(
    broker: &Broker,
    tenant: &Tenant,
    items: &[PushItem],
    message_ids: &[Uuid],
) -> Result<Vec<Option<Vec<u8>>>, PushError> {
    let mut encrypted: HashMap<&QueueName, bool> = HashMap::new();
    for item in items {
        if !encrypted.contains_key(&item.queue) {
            let on = broker
                .encrypted_queues
                .is_encrypted(broker, tenant, &item.queue)
                .await?;
            encrypted.insert(&item.queue, on);
        }
    }
    if !encrypted.values().any(|on| *on) {
        return Ok(vec![None; items.len()]);
    }
    let key = broker.config.push.payload_key.as_ref();
    items
        .iter()
        .zip(message_ids)
        .map(|(item, id)| match (encrypted[&item.queue], key) {
            (false, _) => Ok(None),
            (true, Some(key)) => Ok(Some(key.seal(id, &item.payload))),
            (true, None) => Err(PushError::NoKey {
                queue: item.queue.as_str().to_owned(),
            }),
        })
        .collect()
}
