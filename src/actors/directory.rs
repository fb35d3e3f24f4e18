//! The directory: the addresses of the live group actors, by queue and then by group name.
//!
//! The registry lists an actor here when it starts one and looks it up for every pop, ack
//! and push hint; the actor crosses itself out when it stops ([`Directory::forget`]). It is
//! generic over the actor only so that the group actor, which must reach it, is not named
//! here: monomorphised, it is the same code as a map of `Addr<GroupActor>`.

use std::collections::HashMap;
use std::sync::Mutex;

use actix::{Actor, Addr};

use super::GroupKey;
use crate::domain::{QueueName, Tenant};

type QueueKey = (Tenant, QueueName);

/// Where the live actors of every (tenant, queue, consumer group) are.
pub struct Directory<A: Actor> {
    queues: Mutex<HashMap<QueueKey, HashMap<String, Addr<A>>>>,
}

impl<A: Actor> Default for Directory<A> {
    fn default() -> Self {
        Directory {
            queues: Mutex::new(HashMap::new()),
        }
    }
}

impl<A: Actor> Directory<A> {
    /// The live actor of `key`, or the one `start` makes, listed in its place. `start` runs
    /// under the directory's lock, so two callers never start two actors for one group.
    pub fn find_or_start(&self, key: &GroupKey, start: impl FnOnce() -> Addr<A>) -> Addr<A> {
        let mut queues = self.lock();
        let queue = queues
            .entry((key.tenant.clone(), key.queue.clone()))
            .or_default();
        if let Some(addr) = queue.get(key.group.as_str()) {
            if addr.connected() {
                return addr.clone();
            }
        }
        let addr = start();
        queue.insert(key.group.as_str().to_owned(), addr.clone());
        addr
    }

    /// Calls `each` with every actor listed for a queue (under the lock: `each` only sends).
    pub fn each_of_queue(&self, tenant: &Tenant, queue: &QueueName, each: impl FnMut(&Addr<A>)) {
        let queues = self.lock();
        if let Some(queue) = queues.get(&(tenant.clone(), queue.clone())) {
            queue.values().for_each(each);
        }
    }

    /// Calls `found` with the actor listed for `key`, if one is (under the lock: `found`
    /// only sends).
    pub fn with(&self, key: &GroupKey, found: impl FnOnce(&Addr<A>)) {
        let queues = self.lock();
        if let Some(addr) = queues
            .get(&(key.tenant.clone(), key.queue.clone()))
            .and_then(|q| q.get(key.group.as_str()))
        {
            found(addr);
        }
    }

    /// Every listed actor, or only those of `tenant`'s queues when given.
    pub fn all(&self, tenant: Option<&Tenant>) -> Vec<Addr<A>> {
        let queues = self.lock();
        queues
            .iter()
            .filter(|((owner, _), _)| tenant.map_or(true, |t| t == owner))
            .flat_map(|(_, q)| q.values().cloned())
            .collect()
    }

    /// Actors listed right now.
    pub fn len(&self) -> usize {
        self.lock().values().map(HashMap::len).sum()
    }

    /// True when no actor is listed.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Crosses out a stopped actor (only if `key` still lists that actor, not a newer one).
    pub fn forget(&self, key: &GroupKey, addr: &Addr<A>) {
        let mut queues = self.lock();
        let queue_key = (key.tenant.clone(), key.queue.clone());
        if let Some(queue) = queues.get_mut(&queue_key) {
            if queue.get(key.group.as_str()) == Some(addr) {
                queue.remove(key.group.as_str());
            }
            if queue.is_empty() {
                queues.remove(&queue_key);
            }
        }
        // After a burst of names, give the map's memory back instead of keeping its peak.
        if queues.capacity() > 4 * queues.len() + 64 {
            queues.shrink_to_fit();
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<QueueKey, HashMap<String, Addr<A>>>> {
        self.queues
            .lock()
            .expect("directory lock is never poisoned")
    }
}
