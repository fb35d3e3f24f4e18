//! What nodes say to each other: the handshake and the hints, encoded as msgpack (rmp-serde).
//!
//! Every field a peer sends is untrusted input: the receiver parses names back into domain
//! types and drops what does not parse. Nothing here is ever the source of truth; a hint
//! only makes a node look at PostgreSQL sooner.

use serde::{Deserialize, Serialize};

use crate::domain::ephemeral::{Answer, Call};

/// One framed message on a mesh connection.
///
/// A connection is one-way for hints: the node that dialled sends, the node that accepted
/// listens. The acceptor speaks first with [`MeshMessage::Challenge`]; the dialler answers
/// [`MeshMessage::Hello`]; the acceptor confirms with [`MeshMessage::Welcome`] (or hangs
/// up) and says nothing more; from then on the dialler only sends hints and pings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum MeshMessage {
    /// The acceptor's greeting: who it is, and a nonce the dialler must sign.
    Challenge {
        /// The acceptor's cluster name; a dialler from another cluster hangs up.
        cluster: String,
        /// The acceptor's node id (for logs and metrics).
        node_id: String,
        /// Random per process start: a dialler that sees its own instance has dialled
        /// itself and stops.
        instance: [u8; 16],
        /// Random per connection: what the dialler's proof signs.
        nonce: [u8; 16],
    },
    /// The dialler's answer to the challenge.
    Hello {
        /// The dialler's cluster name.
        cluster: String,
        /// The dialler's node id.
        node_id: String,
        /// HMAC-SHA256 of the nonce and node id under the shared secret; empty when the
        /// cluster runs without a secret.
        proof: Vec<u8>,
        /// Random per connection: with the challenge's nonce, it keys the frames' tags
        /// (`super::sealed`), so each connection has a key of its own.
        #[serde(default)]
        nonce: [u8; 16],
    },
    /// The acceptor took the dialler's hello: hints may flow.
    Welcome,
    /// Messages landed in a partition: wake the queue's groups on this node.
    PushLanded(PushHint),
    /// A queue's configuration changed: drop what is cached about it.
    ConfigChanged {
        /// The queue's tenant.
        tenant: String,
        /// The queue.
        queue: String,
    },
    /// Pop maintenance mode was switched on a node.
    MaintenanceChanged {
        /// The new value of the switch.
        pop: bool,
    },
    /// Liveness: sent when a connection has been quiet for a while.
    Ping,
    /// An ack released a group's lease on a partition that still holds messages: put it
    /// back on that group's ring now instead of at the old lease's expiry.
    ///
    /// Variants are encoded by name, so a node that predates this one fails to decode
    /// it, drops the frame, counts it in `framesDropped` and keeps the connection: an
    /// older peer only misses the hint (its ring finds the partition when the lease
    /// expires, as before). New kinds are added the same way.
    AckReleased(ReleaseHint),
    /// A call on an ephemeral queue this node forwards to the queue's owner node
    /// (`crate::ephemeral::owner`): the only state the mesh carries rather than hints, since
    /// ephemeral contents live in the owner's memory alone. Answered by
    /// [`MeshMessage::EphemeralReply`] over the owner's own connection to the sender.
    EphemeralCall(EphemeralCall),
    /// The owner's answer to an [`MeshMessage::EphemeralCall`].
    EphemeralReply(EphemeralReply),
}

/// A forwarded ephemeral call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EphemeralCall {
    /// The sender's id for this call, echoed in the reply.
    pub request: u64,
    /// The sender's node id: where the reply goes.
    pub from: String,
    /// The caller's tenant.
    pub tenant: String,
    /// The checked call.
    pub call: Call,
}

/// The owner's answer to a forwarded call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EphemeralReply {
    /// The sender's id of the call.
    pub request: u64,
    /// The answer, as the owner would have given it over HTTP.
    pub answer: Answer,
}

/// A push hint: (tenant, queue, partition) and how far the partition's log now reaches.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PushHint {
    /// The queue's tenant.
    pub tenant: String,
    /// The queue.
    pub queue: String,
    /// `log_partitions.id`.
    pub partition_id: i64,
    /// The partition's name.
    pub partition: String,
    /// The offset of the last message the push appended.
    pub last_offset: i64,
    /// How many messages the push appended to this partition.
    pub messages: u32,
}

/// A release hint: the group whose lease an ack released, and the partition.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReleaseHint {
    /// The queue's tenant.
    pub tenant: String,
    /// The queue.
    pub queue: String,
    /// The consumer group (`__QUEUE_MODE__` for queue mode).
    pub consumer_group: String,
    /// `log_partitions.id`.
    pub partition_id: i64,
    /// The partition's name.
    pub partition: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_message_round_trips_through_msgpack() {
        let messages = [
            MeshMessage::Challenge {
                cluster: "queen".into(),
                node_id: "a".into(),
                instance: [7; 16],
                nonce: [9; 16],
            },
            MeshMessage::Hello {
                cluster: "queen".into(),
                node_id: "b".into(),
                proof: vec![1, 2, 3],
                nonce: [5; 16],
            },
            MeshMessage::PushLanded(PushHint {
                tenant: String::new(),
                queue: "orders".into(),
                partition_id: 42,
                partition: "Default".into(),
                last_offset: 99,
                messages: 3,
            }),
            MeshMessage::ConfigChanged {
                tenant: String::new(),
                queue: "orders".into(),
            },
            MeshMessage::Welcome,
            MeshMessage::MaintenanceChanged { pop: true },
            MeshMessage::Ping,
            MeshMessage::AckReleased(ReleaseHint {
                tenant: String::new(),
                queue: "orders".into(),
                consumer_group: "__QUEUE_MODE__".into(),
                partition_id: 42,
                partition: "Default".into(),
            }),
            MeshMessage::EphemeralCall(EphemeralCall {
                request: 7,
                from: "a".into(),
                tenant: String::new(),
                call: Call::Push {
                    queue: "live".into(),
                    partition: None,
                    payloads: vec!["{\"x\":1}".into()],
                },
            }),
            MeshMessage::EphemeralReply(EphemeralReply {
                request: 7,
                answer: Answer::ok(200, serde_json::json!({"pushed": 1})),
            }),
        ];
        for message in messages {
            let bytes = rmp_serde::to_vec(&message).unwrap();
            let back: MeshMessage = rmp_serde::from_slice(&bytes).unwrap();
            assert_eq!(back, message);
        }
    }

    /// What an older node sees when a newer one sends a kind it does not know: a decode
    /// error (the listener drops and counts the frame), never a panic or a wrong message.
    #[test]
    fn a_kind_this_node_does_not_know_is_a_decode_error() {
        #[derive(Serialize)]
        enum Newer {
            FromTheFuture { what: String },
        }
        let bytes = rmp_serde::to_vec(&Newer::FromTheFuture {
            what: "later".into(),
        })
        .unwrap();
        assert!(rmp_serde::from_slice::<MeshMessage>(&bytes).is_err());
    }
}
