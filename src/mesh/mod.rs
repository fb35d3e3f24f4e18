//! The peer mesh: broker nodes telling each other about pushes, ack releases, queue-config
//! changes and maintenance switches, so a consumer parked on one node wakes when a push lands on
//! another, before any PostgreSQL claim.
//!
//! The mesh only carries hints. PostgreSQL stays the source of truth: a lost, late or
//! refused hint costs a parked pop one backoff interval (or a reseed), never a message.
//!
//! - [`message`]: the msgpack enum; [`frame`]: length framing and its limits;
//!   [`auth`]: the shared-secret handshake proof; [`sealed`]: the tag every frame after
//!   the handshake carries under a secret, so none can be injected.
//! - [`peer`]: one task per remote node (dial, handshake, send hints, reconnect with
//!   backoff). Hints are handed over with `try_send`, so a dead or slow peer never blocks
//!   a push.
//! - [`membership`]: who the peers are (static list and DNS, re-resolved), starting and
//!   stopping peer tasks as that set changes.
//! - [`listener`]: accepts peers' connections, checks the handshake, and hands hints to
//!   the node's [`Inbox`]. Malformed, oversized, unauthenticated or foreign-cluster frames
//!   are dropped and counted.
//! - [`inbox`]: what a received hint does to this broker (group actors, maintenance).
//! - [`calls`]: ephemeral calls forwarded to the queue's owner node and their replies
//!   (the one kind of traffic that is not a hint: ephemeral contents live only in the
//!   owner's memory).

pub mod auth;
pub mod calls;
pub mod frame;
pub mod inbox;
pub mod listener;
pub mod membership;
pub mod message;
pub mod peer;
pub mod sealed;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::{json, Value};
use tokio::task::JoinHandle;

use crate::actors::ring::PartitionRef;
use crate::actors::GroupKey;
use crate::config::MeshConfig;
use crate::domain::{QueueName, Tenant};
use message::{MeshMessage, PushHint, ReleaseHint};
use peer::PeerHandle;

pub use inbox::Inbox;

/// The node's side of the mesh: its identity, its peers and its counters. Cheap to clone.
#[derive(Clone)]
pub struct Mesh {
    shared: Arc<Shared>,
}

/// What the mesh's tasks share.
pub(crate) struct Shared {
    config: MeshConfig,
    /// Random per process start, so a node that dials itself (its own address is in the
    /// peer list or the DNS answer) can tell.
    instance: [u8; 16],
    counters: Counters,
    peers: Mutex<HashMap<SocketAddr, PeerHandle>>,
    tasks: Mutex<Vec<JoinHandle<()>>>,
    /// Ephemeral calls forwarded to other nodes, waiting on their replies.
    calls: calls::Pending,
}

/// The mesh's counters, exported on `/metrics`.
#[derive(Default)]
pub(crate) struct Counters {
    hints_sent: AtomicU64,
    hints_dropped: AtomicU64,
    hints_received: AtomicU64,
    frames_dropped: AtomicU64,
    handshakes_refused: AtomicU64,
    connect_failures: AtomicU64,
    inbound_connections: AtomicU64,
}

impl Counters {
    fn bump(counter: &AtomicU64) {
        counter.fetch_add(1, Ordering::Relaxed);
    }
}

impl Mesh {
    /// The mesh of this node, dialling its peers as [`membership`] finds them. Hints it
    /// receives need [`Mesh::listen`].
    pub fn start(config: MeshConfig) -> Self {
        let instance = *uuid::Uuid::new_v4().as_bytes();
        let mesh = Mesh {
            shared: Arc::new(Shared {
                config,
                instance,
                counters: Counters::default(),
                peers: Mutex::new(HashMap::new()),
                tasks: Mutex::new(Vec::new()),
                calls: calls::Pending::default(),
            }),
        };
        let membership = tokio::spawn(membership::run(mesh.shared.clone()));
        mesh.keep(membership);
        mesh
    }

    /// Accepts peers' connections on `listener` and hands their hints to `inbox`.
    pub fn listen(&self, listener: tokio::net::TcpListener, inbox: Arc<dyn Inbox>) {
        let task = tokio::spawn(listener::run(self.shared.clone(), listener, inbox));
        self.keep(task);
    }

    /// Tells every peer that messages landed in a partition.
    pub fn push_landed(
        &self,
        tenant: &Tenant,
        queue: &QueueName,
        partition: &PartitionRef,
        last_offset: i64,
        messages: u32,
    ) {
        self.broadcast(&MeshMessage::PushLanded(PushHint {
            tenant: tenant.as_str().to_owned(),
            queue: queue.as_str().to_owned(),
            partition_id: partition.id,
            partition: partition.name.to_string(),
            last_offset,
            messages,
        }));
    }

    /// Tells every peer that an ack released a group's lease on a partition that still
    /// holds messages, so their actors of that group put it back on the ring now.
    pub fn ack_released(&self, key: &GroupKey, partition: &PartitionRef) {
        self.broadcast(&MeshMessage::AckReleased(ReleaseHint {
            tenant: key.tenant.as_str().to_owned(),
            queue: key.queue.as_str().to_owned(),
            consumer_group: key.group.as_str().to_owned(),
            partition_id: partition.id,
            partition: partition.name.to_string(),
        }));
    }

    /// Tells every peer that a queue's configuration changed.
    pub fn config_changed(&self, tenant: &Tenant, queue: &QueueName) {
        self.broadcast(&MeshMessage::ConfigChanged {
            tenant: tenant.as_str().to_owned(),
            queue: queue.as_str().to_owned(),
        });
    }

    /// Tells every peer that pop maintenance mode was switched.
    pub fn maintenance_changed(&self, pop: bool) {
        self.broadcast(&MeshMessage::MaintenanceChanged { pop });
    }

    /// Stops dialling, listening and every connection.
    pub fn stop(&self) {
        let tasks = std::mem::take(&mut *self.shared.tasks.lock().expect("mesh lock"));
        for task in tasks {
            task.abort();
        }
        let peers = std::mem::take(&mut *self.shared.peers.lock().expect("mesh lock"));
        for (_, peer) in peers {
            peer.stop();
        }
    }

    /// The mesh's state and counters for `/metrics`.
    pub fn snapshot(&self) -> Value {
        let shared = &self.shared;
        let c = &shared.counters;
        let peers: Vec<Value> = {
            let peers = shared.peers.lock().expect("mesh lock");
            let mut list: Vec<Value> = peers
                .iter()
                .map(|(addr, peer)| peer.status_json(*addr))
                .collect();
            list.sort_by(|a, b| a["addr"].as_str().cmp(&b["addr"].as_str()));
            list
        };
        let connected = peers
            .iter()
            .filter(|p| p["connected"] == json!(true))
            .count();
        let load = |counter: &AtomicU64| counter.load(Ordering::Relaxed);
        json!({
            "nodeId": shared.config.node_id,
            "cluster": shared.config.cluster_name,
            "peersConnected": connected,
            "peers": peers,
            "hintsSent": load(&c.hints_sent),
            "hintsDropped": load(&c.hints_dropped),
            "hintsReceived": load(&c.hints_received),
            "framesDropped": load(&c.frames_dropped),
            "handshakesRefused": load(&c.handshakes_refused),
            "connectFailures": load(&c.connect_failures),
            "inboundConnections": load(&c.inbound_connections),
        })
    }

    fn broadcast(&self, message: &MeshMessage) {
        let peers = self.shared.peers.lock().expect("mesh lock");
        if peers.is_empty() {
            return;
        }
        let frame = frame::encode(message);
        for peer in peers.values() {
            if !peer.offer(frame.clone()) {
                Counters::bump(&self.shared.counters.hints_dropped);
            }
        }
    }

    fn keep(&self, task: JoinHandle<()>) {
        self.shared.tasks.lock().expect("mesh lock").push(task);
    }
}
