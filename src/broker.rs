//! The running broker's shared parts, built once by `app` and handed to every handler:
//! the pool, the limiter, the group-actor registry, the counters, the maintenance switch and
//! the peer mesh.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};

use tokio_util::sync::CancellationToken;

use crate::actors::registry::Registry;
use crate::config::Config;
use crate::db::{Db, DbError};
use crate::limiter::{Limiter, Permit};
use crate::log::ack::lease_book::LeaseBook;
use crate::log::encryption::EncryptedQueues;
use crate::log::push::combiner::PushCombiner;
use crate::log::push::directory::KnownPartitions;
use crate::log::push::window::DedupWindows;
use crate::mesh::Mesh;
use crate::metrics::Metrics;

/// Set once any queue on this broker has a minimum pop wait: until then the pop path pays
/// one relaxed load for the feature and nothing else.
pub static MIN_POP_WAIT_IN_USE: AtomicBool = AtomicBool::new(false);

/// Everything a request may need.
pub struct Broker {
    /// The database pool.
    pub db: Db,
    /// The adaptive limit around database work.
    pub limiter: Arc<Limiter>,
    /// The group actors.
    pub registry: Arc<Registry>,
    /// The counters.
    pub metrics: Arc<Metrics>,
    /// Pop maintenance mode, refreshed from the database.
    pub maintenance: AtomicBool,
    /// Push maintenance mode (pushes go to the spool), refreshed from the database.
    pub push_maintenance: AtomicBool,
    /// Counts this node's own changes of either maintenance switch (an operator's request,
    /// a peer's hint). The refresher applies what it read only if no change happened
    /// while it read: a read that began before an operator's switch committed would
    /// otherwise put the old value back for up to a refresh interval.
    pub maintenance_changes: std::sync::Mutex<u64>,
    /// This node's push spool; `None` when `FILE_BUFFER_MAX_BYTES` is 0 or its default
    /// folder could not be used.
    pub spool: Option<Arc<crate::log::spool::Spool>>,
    /// The effective configuration.
    pub config: Arc<Config>,
    /// The peer mesh: hints to other nodes.
    pub mesh: Mesh,
    /// Which queues seal their payloads, as this node last read it.
    pub encrypted_queues: EncryptedQueues,
    /// Per partition, the transaction ids stored within the dedup window (push dedup).
    pub dedup: Arc<DedupWindows>,
    /// The partitions this node has seen created: on the Citus layout, a push creates only
    /// the others before its transaction (`log::push::directory`).
    pub known_partitions: KnownPartitions,
    /// What this node's claims leased, so the acks of its own pops skip re-reading them.
    pub leases: LeaseBook,
    /// The writers that combine concurrent pushes into shared commits.
    pub push_combiner: PushCombiner,
    /// This broker, held weakly (a strong handle would keep it alive for ever): what the
    /// push writers, tasks of their own, take a handle from.
    pub this: Weak<Broker>,
    /// Ephemeral queues: the contents this node owns, in memory only.
    pub ephemeral: Arc<crate::ephemeral::Ephemeral>,
    /// Cancelled when the broker starts to stop: parked pops answer empty at once and
    /// readiness turns false, so a load balancer sends new work elsewhere.
    pub draining: CancellationToken,
    /// The earliest due time of a timer scheduled on this node, for the fire loop
    /// (`crate::timers`).
    pub timers: crate::timers::wake::TimerWake,
}

impl Broker {
    /// A limiter permit for database work, within the pool timeout (else "pool exhausted",
    /// or "unavailable" while the database refuses connections).
    pub async fn permit(&self) -> Result<Permit, DbError> {
        self.limiter
            .acquire(self.config.database.pool_timeout)
            .await
            .ok_or_else(|| self.db.exhausted())
    }

    /// A handle to this broker, for a task of its own; `None` once it is being dropped.
    pub fn handle(&self) -> Option<Arc<Broker>> {
        self.this.upgrade()
    }

    /// True once the broker has begun to stop.
    pub fn is_draining(&self) -> bool {
        self.draining.is_cancelled()
    }

    /// True while pop maintenance mode is on.
    pub fn in_maintenance(&self) -> bool {
        self.maintenance.load(Ordering::Relaxed)
    }

    /// True while push maintenance mode is on.
    pub fn in_push_maintenance(&self) -> bool {
        self.push_maintenance.load(Ordering::Relaxed)
    }

    /// Applies a change of the maintenance switches made here or told by a peer (`None`
    /// leaves a switch as it is), counted so the refresher does not undo it with a read
    /// that began before it.
    pub fn change_maintenance(&self, pop: Option<bool>, push: Option<bool>) {
        let mut changes = self
            .maintenance_changes
            .lock()
            .expect("maintenance lock is never poisoned");
        *changes += 1;
        if let Some(pop) = pop {
            self.maintenance.store(pop, Ordering::Relaxed);
        }
        if let Some(push) = push {
            self.set_push_maintenance(push);
        }
    }

    /// Sets push maintenance as this node sees it; turning it off wakes the spool's replay.
    pub fn set_push_maintenance(&self, on: bool) -> bool {
        let was = self.push_maintenance.swap(on, Ordering::Relaxed);
        if was && !on {
            if let Some(spool) = &self.spool {
                spool.wake();
            }
        }
        was
    }
}
