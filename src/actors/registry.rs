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
use std::sync::{Arc, Mutex};
use std::thread::{self, ThreadId};
use std::time::Duration;

use actix::prelude::*;
use actix::{Arbiter, ArbiterHandle};

use super::directory::Directory;
use super::group::{
    AckReleased, ConfigChanged, DrainStarted, GroupActor, GroupStats, PushLanded, Stats,
};
use super::ring::PartitionRef;
use super::wake_gate::WakeSource;
use super::GroupKey;
use crate::domain::{QueueName, Tenant};
use crate::metrics::Metrics;

/// Where group actors are found.
pub struct Registry {
    /// The live actors; each crosses itself out when it stops.
    directory: Arc<Directory<GroupActor>>,
    arbiter: ArbiterHandle,
    /// The HTTP workers' arbiters, by thread ([`Registry::adopt_worker_thread`]). A
    /// restarted worker is a new thread and adds itself; thread ids are never reused, so
    /// a stopped worker's entry is never chosen again.
    workers: Mutex<HashMap<ThreadId, ArbiterHandle>>,
    metrics: Arc<Metrics>,
    hotlist: bool,
    reseed_every: Duration,
    /// How long a group actor with nothing to do lives on (`QUEEN_GROUP_IDLE_STOP_MS`).
    idle_stop: Duration,
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
        Arc::new(Registry {
            directory: Arc::default(),
            arbiter,
            workers: Mutex::new(HashMap::new()),
            metrics,
            hotlist,
            reseed_every,
            idle_stop,
        })
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
        self.directory.find_or_start(key, || {
            let actor_key = key.clone();
            let directory = self.directory.clone();
            let metrics = self.metrics.clone();
            let (hotlist, reseed_every, idle_stop) =
                (self.hotlist, self.reseed_every, self.idle_stop);
            GroupActor::start_in_arbiter(&self.home(), move |_| {
                GroupActor::new(
                    actor_key,
                    directory,
                    metrics,
                    hotlist,
                    reseed_every,
                    idle_stop,
                )
            })
        })
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
        self.directory.each_of_queue(tenant, queue, |addr| {
            addr.do_send(PushLanded {
                partition: partition.clone(),
                messages,
                source,
            });
        });
    }

    /// Tells every group actor of a queue that its configuration changed.
    pub fn config_changed(&self, tenant: &Tenant, queue: &QueueName) {
        self.directory
            .each_of_queue(tenant, queue, |addr| addr.do_send(ConfigChanged));
    }

    /// Tells a group's actor that an ack released a partition that still holds messages.
    pub fn ack_released(&self, key: &GroupKey, partition: PartitionRef) {
        self.directory
            .with(key, |addr| addr.do_send(AckReleased(partition)));
    }

    /// Tells every group actor that the broker drains: their parked pops stop waiting.
    /// Called after the broker's drain token is cancelled, so a pop that parks after its
    /// actor handled this finds the broker draining and does not wait.
    pub fn drain_started(&self) {
        for addr in self.directory.all(None) {
            addr.do_send(DrainStarted);
        }
    }

    /// Every live group actor's state, or only those of `tenant`'s queues when given.
    pub async fn stats(&self, tenant: Option<&Tenant>) -> Vec<GroupStats> {
        let addrs = self.directory.all(tenant);
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
        self.directory.len()
    }

    /// True when no group actor is alive.
    pub fn is_empty(&self) -> bool {
        self.directory.is_empty()
    }
}

#[cfg(test)]
mod tests;
