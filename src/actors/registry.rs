//! The registry: finds (or starts) the group actor of a (tenant, queue, consumer group), and
//! fans push hints out to every group of a queue.
//!
//! A group actor runs on the arbiter of the HTTP worker whose request first asked for it,
//! or on the registry's own arbiter when no worker asked (the mesh, maintenance, tests).
//! Its handlers are short and in-memory, and its one thread keeps its messages ordered
//! without locks wherever that thread is. On a worker's thread, the pops and acks that
//! worker serves reach their group's actor and get its answer without waking another
//! thread: with every actor on an arbiter of their own, each pop sent its plan request to
//! that thread and was woken back with the plan, and each ack woke it once more, which
//! cost the broker about a sixth of its CPU in a pop+ack drain at batch 10
//! (`bench/analysis.md`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};
use std::thread::{self, ThreadId};
use std::time::Duration;

use actix::prelude::*;
use actix::{Arbiter, ArbiterHandle};

use super::group::{AckReleased, ConfigChanged, GroupActor, GroupStats, PushLanded, Stats};
use super::ring::PartitionRef;
use super::wake_gate::WakeSource;
use super::GroupKey;
use crate::domain::{QueueName, Tenant};
use crate::metrics::Metrics;

type QueueKey = (Tenant, QueueName);

/// Where group actors are found.
pub struct Registry {
    groups: Mutex<HashMap<QueueKey, HashMap<String, Addr<GroupActor>>>>,
    arbiter: ArbiterHandle,
    /// The HTTP workers' arbiters, by thread ([`Registry::adopt_worker_thread`]). A
    /// restarted worker is a new thread and adds itself; thread ids are never reused, so
    /// a stopped worker's entry is never chosen again.
    workers: Mutex<HashMap<ThreadId, ArbiterHandle>>,
    metrics: Arc<Metrics>,
    hotlist: bool,
    reseed_every: Duration,
    idle_stop: Duration,
    me: Weak<Registry>,
}

impl Registry {
    /// A registry whose actors run on `arbiter`, or on the arbiter of the worker that asked.
    pub fn new(
        arbiter: ArbiterHandle,
        metrics: Arc<Metrics>,
        hotlist: bool,
        reseed_every: Duration,
        idle_stop: Duration,
    ) -> Arc<Self> {
        Arc::new_cyclic(|me| Registry {
            groups: Mutex::new(HashMap::new()),
            arbiter,
            workers: Mutex::new(HashMap::new()),
            metrics,
            hotlist,
            reseed_every,
            idle_stop,
            me: me.clone(),
        })
    }

    /// How long a group actor with nothing to do lives on (`QUEEN_GROUP_IDLE_STOP_MS`).
    pub fn idle_stop(&self) -> Duration {
        self.idle_stop
    }

    /// The shared counters.
    pub fn metrics(&self) -> &Arc<Metrics> {
        &self.metrics
    }

    /// Makes the calling thread, an HTTP worker inside its arbiter, a home for the group
    /// actors its requests start (see the module's comment). Outside an arbiter it does
    /// nothing.
    pub fn adopt_worker_thread(&self) {
        if let Some(arbiter) = Arbiter::try_current() {
            let mut workers = self
                .workers
                .lock()
                .expect("registry lock is never poisoned");
            workers.insert(thread::current().id(), arbiter);
        }
    }

    /// The arbiter a group actor started now runs on: the calling worker's, else our own.
    fn home(&self) -> ArbiterHandle {
        let workers = self
            .workers
            .lock()
            .expect("registry lock is never poisoned");
        workers
            .get(&thread::current().id())
            .unwrap_or(&self.arbiter)
            .clone()
    }

    /// The actor of a group, started on first use (on the calling worker's arbiter).
    pub fn group(&self, key: &GroupKey) -> Addr<GroupActor> {
        let mut groups = self.groups.lock().expect("registry lock is never poisoned");
        let queue = groups
            .entry((key.tenant.clone(), key.queue.clone()))
            .or_default();
        if let Some(addr) = queue.get(key.group.as_str()) {
            if addr.connected() {
                return addr.clone();
            }
        }
        let registry = self
            .me
            .upgrade()
            .expect("the registry outlives its actors' creation");
        let actor_key = key.clone();
        let (hotlist, reseed_every) = (self.hotlist, self.reseed_every);
        let addr = GroupActor::start_in_arbiter(&self.home(), move |_| {
            GroupActor::new(actor_key, registry, hotlist, reseed_every)
        });
        queue.insert(key.group.as_str().to_owned(), addr.clone());
        addr
    }

    /// Tells every group actor of a queue that messages landed in a partition.
    pub fn push_landed(
        &self,
        tenant: &Tenant,
        queue: &QueueName,
        partition: PartitionRef,
        messages: u32,
        source: WakeSource,
    ) {
        let groups = self.groups.lock().expect("registry lock is never poisoned");
        if let Some(queue) = groups.get(&(tenant.clone(), queue.clone())) {
            for addr in queue.values() {
                addr.do_send(PushLanded {
                    partition: partition.clone(),
                    messages,
                    source,
                });
            }
        }
    }

    /// Tells every group actor of a queue that its configuration changed.
    pub fn config_changed(&self, tenant: &Tenant, queue: &QueueName) {
        let groups = self.groups.lock().expect("registry lock is never poisoned");
        if let Some(queue) = groups.get(&(tenant.clone(), queue.clone())) {
            for addr in queue.values() {
                addr.do_send(ConfigChanged);
            }
        }
    }

    /// Tells a group's actor that an ack released a partition that still holds messages.
    pub fn ack_released(&self, key: &GroupKey, partition: PartitionRef) {
        let groups = self.groups.lock().expect("registry lock is never poisoned");
        if let Some(addr) = groups
            .get(&(key.tenant.clone(), key.queue.clone()))
            .and_then(|q| q.get(key.group.as_str()))
        {
            addr.do_send(AckReleased(partition));
        }
    }

    /// Every live group actor's state, or only those of `tenant`'s queues when given.
    pub async fn stats(&self, tenant: Option<&Tenant>) -> Vec<GroupStats> {
        let addrs: Vec<Addr<GroupActor>> = {
            let groups = self.groups.lock().expect("registry lock is never poisoned");
            groups
                .iter()
                .filter(|((owner, _), _)| tenant.map_or(true, |t| t == owner))
                .flat_map(|(_, q)| q.values().cloned())
                .collect()
        };
        let mut out = Vec::with_capacity(addrs.len());
        for addr in addrs {
            if let Ok(stats) = addr.send(Stats).await {
                out.push(stats);
            }
        }
        out
    }

    /// Group actors alive right now.
    pub fn len(&self) -> usize {
        let groups = self.groups.lock().expect("registry lock is never poisoned");
        groups.values().map(HashMap::len).sum()
    }

    /// True when no group actor is alive.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Drops a stopped actor's entry (only if it is still that actor's).
    pub(super) fn forget(&self, key: &GroupKey, addr: &Addr<GroupActor>) {
        let mut groups = self.groups.lock().expect("registry lock is never poisoned");
        let queue_key = (key.tenant.clone(), key.queue.clone());
        if let Some(queue) = groups.get_mut(&queue_key) {
            if queue.get(key.group.as_str()) == Some(addr) {
                queue.remove(key.group.as_str());
            }
            if queue.is_empty() {
                groups.remove(&queue_key);
            }
        }
        // After a burst of names, give the map's memory back instead of keeping its peak.
        if groups.capacity() > 4 * groups.len() + 64 {
            groups.shrink_to_fit();
        }
    }
}

#[cfg(test)]
mod tests;
