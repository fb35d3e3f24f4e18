//! What a hint from a peer does to this node: a push hint wakes the queue's local group
//! actors (ring append, gate open) exactly as a local push would, a release hint puts the
//! partition back on its group's ring as a local ack-promote would, a config change makes
//! them (and the encrypted-queue cache) drop cached options, a maintenance change flips the switch at once instead of at
//! the next database refresh. An ephemeral call forwarded by a peer runs on this node's
//! engine and its answer goes back (`crate::ephemeral::serve`); a reply completes the call
//! this node forwarded.

use std::sync::Weak;

use tracing::debug;

use super::message::MeshMessage;
use crate::actors::ring::PartitionRef;
use crate::actors::wake_gate::WakeSource;
use crate::actors::GroupKey;
use crate::broker::Broker;
use crate::domain::{ConsumerGroup, PartitionName, QueueName, Tenant};

/// Where the mesh listener hands the hints it accepted.
pub trait Inbox: Send + Sync {
    /// Applies one hint from `from` (a peer's node id). False when the hint names
    /// something that cannot exist (an invalid queue or partition name); it is dropped.
    fn deliver(&self, from: &str, message: MeshMessage) -> bool;
}

/// The inbox of a running broker. Weak, so the mesh never keeps a stopped broker alive.
pub struct BrokerInbox(pub Weak<Broker>);

impl Inbox for BrokerInbox {
    fn deliver(&self, from: &str, message: MeshMessage) -> bool {
        let Some(broker) = self.0.upgrade() else {
            return true;
        };
        match message {
            MeshMessage::PushLanded(hint) => {
                let (Ok(queue), Ok(partition)) = (
                    QueueName::parse(hint.queue),
                    PartitionName::parse(hint.partition),
                ) else {
                    return false;
                };
                broker.registry.push_landed(
                    &Tenant::from_stored(hint.tenant),
                    &queue,
                    PartitionRef {
                        id: hint.partition_id,
                        name: partition.as_str().into(),
                    },
                    hint.messages,
                    WakeSource::Peer,
                );
            }
            MeshMessage::AckReleased(hint) => {
                let (Ok(queue), Ok(group), Ok(partition)) = (
                    QueueName::parse(hint.queue),
                    ConsumerGroup::parse(Some(&hint.consumer_group)),
                    PartitionName::parse(hint.partition),
                ) else {
                    return false;
                };
                let key = GroupKey {
                    tenant: Tenant::from_stored(hint.tenant),
                    queue,
                    group,
                };
                broker.registry.ack_released(
                    &key,
                    PartitionRef {
                        id: hint.partition_id,
                        name: partition.as_str().into(),
                    },
                );
            }
            MeshMessage::ConfigChanged { tenant, queue } => {
                let Ok(queue) = QueueName::parse(queue) else {
                    return false;
                };
                let tenant = Tenant::from_stored(tenant);
                broker.registry.config_changed(&tenant, &queue);
                broker.encrypted_queues.forget(&tenant, &queue);
            }
            MeshMessage::MaintenanceChanged { pop } => {
                broker.change_maintenance(Some(pop), None);
                debug!(
                    peer = from,
                    maintenance = pop,
                    "maintenance switched by a peer"
                );
            }
            MeshMessage::EphemeralCall(call) => {
                if !call.call.is_sound() {
                    return false;
                }
                tokio::spawn(crate::ephemeral::serve::serve_forwarded(broker, call));
            }
            MeshMessage::EphemeralReply(reply) => broker.mesh.replied(reply),
            MeshMessage::Challenge { .. }
            | MeshMessage::Hello { .. }
            | MeshMessage::Welcome
            | MeshMessage::Ping => {}
        }
        true
    }
}
