//! Encrypted queues (`encryptionEnabled`): which queues seal their payloads at rest, as
//! this node last read it. The sealing itself is the push path's (`log::push::seal`).
//!
//! Whether a queue is encrypted is a queue option in PostgreSQL; every push would otherwise
//! read it, so each node keeps what it read for [`REMEMBER_FOR`]. A configure on this node
//! or on a peer (through the mesh) forgets the queue at once; without the mesh, a peer's
//! change reaches this node within [`REMEMBER_FOR`].

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::db::{queues, Db, DbError};
use crate::domain::{QueueName, Tenant};

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
        db: &Db,
        tenant: &Tenant,
        queue: &QueueName,
    ) -> Result<bool, DbError> {
        let key = (tenant.clone(), queue.clone());
        if let Some((on, at)) = self.known.lock().expect("cache lock").map.get(&key) {
            if at.elapsed() < REMEMBER_FOR {
                return Ok(*on);
            }
        }
        let mut conn = db.conn().await?;
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
