//! The engine: every ephemeral queue this node owns, by (tenant, queue), the broker-wide
//! byte budget they share, and this incarnation's random number (part of every message
//! id, so an ack of a message from before a restart or an ownership move answers
//! `stale`). The calls that need PostgreSQL or wait are [`super::run`]'s.

use std::collections::HashMap;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex, RwLock};

use serde_json::{json, Value};

use super::budget::Budget;
use super::counters::Counters;
use super::owner::owner;
use super::queue::{Ctx, Queue};
use crate::domain::ephemeral::EphemeralOptions;

/// `(tenant, queue)`.
pub type QueueKey = (String, String);

/// The ephemeral queues of this node.
#[derive(Debug)]
pub struct Ephemeral {
    incarnation: u64,
    budget: Budget,
    ring_ids: AtomicU64,
    queues: RwLock<HashMap<QueueKey, Arc<Queue>>>,
    /// The mesh members as this engine last saw them (who owns what).
    members: Mutex<Vec<String>>,
    /// What only grows: losses of queues no longer held, calls forwarded.
    pub counters: Counters,
}

impl Ephemeral {
    /// An empty engine holding at most `max_bytes` of contents.
    pub fn new(max_bytes: u64) -> Self {
        let random = *uuid::Uuid::new_v4().as_bytes();
        let mut incarnation = [0u8; 8];
        incarnation.copy_from_slice(&random[..8]);
        Ephemeral {
            incarnation: u64::from_le_bytes(incarnation),
            budget: Budget::new(max_bytes),
            ring_ids: AtomicU64::new(1),
            queues: RwLock::new(HashMap::new()),
            members: Mutex::new(Vec::new()),
            counters: Counters::default(),
        }
    }

    /// What a queue operation needs of the engine.
    pub fn ctx(&self) -> Ctx<'_> {
        Ctx {
            budget: &self.budget,
            incarnation: self.incarnation,
            ring_ids: &self.ring_ids,
        }
    }

    /// The queue, when this node holds it.
    pub fn get(&self, key: &QueueKey) -> Option<Arc<Queue>> {
        self.queues
            .read()
            .expect("ephemeral map lock")
            .get(key)
            .cloned()
    }

    /// The queue, made with `options` if this node does not hold it yet (a queue made
    /// meanwhile by another call wins).
    pub fn get_or_insert(
        &self,
        key: QueueKey,
        options: EphemeralOptions,
        declared: bool,
    ) -> Arc<Queue> {
        self.queues
            .write()
            .expect("ephemeral map lock")
            .entry(key)
            .or_insert_with(|| Arc::new(Queue::new(options, declared)))
            .clone()
    }

    /// Applies a declaration: to the queue if held, else by making it.
    pub fn declare(&self, key: QueueKey, options: EphemeralOptions) {
        let queue = self.get_or_insert(key, options.clone(), true);
        let mut state = queue.lock();
        state.options = options;
        state.declared = true;
        drop(state);
        queue.pushed.notify_waiters();
    }

    /// Forgets a queue, dropping its contents; true when this node held it.
    pub fn remove(&self, key: &QueueKey) -> bool {
        // The map stays locked while the counters are retired, so a snapshot (which reads
        // both under the map's lock) never misses a queue's counters.
        let mut map = self.queues.write().expect("ephemeral map lock");
        match map.remove(key) {
            Some(queue) => {
                self.retire(&queue);
                true
            }
            None => false,
        }
    }

    /// Drops a queue's contents, keeps its counters, and wakes its parked pops.
    fn retire(&self, queue: &Queue) {
        let mut state = queue.lock();
        state.clear(&self.budget);
        let (losses, refused) = state.losses();
        drop(state);
        self.counters.retire(losses, refused);
        queue.pushed.notify_waiters();
    }

    /// The queues of one tenant this node holds, by name.
    pub fn of_tenant(&self, tenant: &str) -> Vec<(String, Arc<Queue>)> {
        let map = self.queues.read().expect("ephemeral map lock");
        let mut list: Vec<(String, Arc<Queue>)> = map
            .iter()
            .filter(|((t, _), _)| t == tenant)
            .map(|((_, q), queue)| (q.clone(), queue.clone()))
            .collect();
        list.sort_by(|a, b| a.0.cmp(&b.0));
        list
    }

    /// Forgets the queues `keep` says this node no longer owns (their contents are lost:
    /// the new owner starts them empty).
    pub fn retain(&self, keep: impl Fn(&QueueKey) -> bool) {
        let mut map = self.queues.write().expect("ephemeral map lock");
        let gone: Vec<QueueKey> = map.keys().filter(|k| !keep(k)).cloned().collect();
        for key in gone {
            if let Some(queue) = map.remove(&key) {
                self.retire(&queue);
            }
        }
    }

    /// Follows a change of the mesh members (`me` among them): the queues this node no
    /// longer owns are dropped, contents and all. Cheap when nothing changed.
    pub fn follow(&self, members: &[String], me: &str) {
        let mut seen = self.members.lock().expect("ephemeral members lock");
        if seen.as_slice() == members {
            return;
        }
        *seen = members.to_vec();
        drop(seen);
        self.retain(|(tenant, queue)| !matches!(owner(members, tenant, queue), Some(o) if o != me));
    }

    /// The figures for `/metrics`: gauges (queues held, that is owned; bytes held against
    /// the cap; messages) and counters (drops, expiries, retries exhausted and refusals,
    /// queues no longer held included; calls forwarded to an owner).
    pub fn snapshot(&self) -> Value {
        let map = self.queues.read().expect("ephemeral map lock");
        let (retired, retired_refused) = self.counters.retired();
        let mut messages = 0;
        let (mut dropped, mut expired, mut exhausted, mut refused) = (
            retired.dropped,
            retired.expired,
            retired.retries_exhausted,
            retired_refused,
        );
        for queue in map.values() {
            let state = queue.lock();
            let (losses, refusals) = state.losses();
            messages += state.held().0;
            dropped += losses.dropped;
            expired += losses.expired;
            exhausted += losses.retries_exhausted;
            refused += refusals;
        }
        json!({
            "queues": map.len(),
            "bytesHeld": self.budget.held(),
            "maxBytes": self.budget.cap(),
            "messages": messages,
            "dropped": dropped,
            "expired": expired,
            "retriesExhausted": exhausted,
            "refused": refused,
            "forwarded": self.counters.forwarded_json(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dropped(engine: &Ephemeral) -> u64 {
        engine.snapshot()["dropped"].as_u64().unwrap()
    }

    /// The snapshot's losses feed Prometheus counters: a queue that leaves this node
    /// (deleted, or moved to another owner) must not take its counts with it.
    #[test]
    fn losses_outlive_the_queues_this_node_stops_holding() {
        let engine = Ephemeral::new(1 << 20);
        let options = EphemeralOptions {
            max_length: 1,
            policy: crate::domain::ephemeral::Policy::DropOldest,
            ..EphemeralOptions::default()
        };
        for queue in ["gone", "moved"] {
            let q = engine.get_or_insert((String::new(), queue.into()), options.clone(), true);
            for payload in ["1", "2", "3"] {
                q.lock()
                    .push("p", &[payload.into()], &engine.ctx())
                    .unwrap();
            }
        }
        assert_eq!(dropped(&engine), 4, "two dropped to make room in each");

        assert!(engine.remove(&(String::new(), "gone".into())));
        assert_eq!(
            dropped(&engine),
            5,
            "its held message dropped, earlier drops kept"
        );
        engine.retain(|(_, q)| q != "moved");
        let snapshot = engine.snapshot();
        assert_eq!(
            (snapshot["dropped"].as_u64(), snapshot["queues"].as_u64()),
            (Some(6), Some(0))
        );
        assert_eq!(snapshot["bytesHeld"], 0);
    }
}
