//! The registry: finds (or starts) the group actor of a (tenant, queue, consumer group), and
//! fans push hints out to every group of a queue.
//!
//! All group actors run on one arbiter of their own: their handlers are short and
//! in-memory, and one thread keeps their messages ordered per actor without locks.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use actix::prelude::*;
use actix::ArbiterHandle;

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
    metrics: Arc<Metrics>,
    hotlist: bool,
    reseed_every: Duration,
    idle_stop: Duration,
    me: Weak<Registry>,
}

impl Registry {
    /// A registry whose actors run on `arbiter`.
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

    /// The actor of a group, started on first use.
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
        let addr = GroupActor::start_in_arbiter(&self.arbiter, move |_| {
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
