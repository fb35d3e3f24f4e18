//! The checked shapes of the streams calls.

use serde_json::Value;
use uuid::Uuid;

use crate::domain::{ConsumerGroup, PushItem, QueueName};

/// `POST /streams/v1/queries`: register (or re-register) a query by name.
#[derive(Debug, Clone)]
pub struct Registration {
    /// The name the user chose (`query_id` in `Stream.run`).
    pub name: String,
    /// The queue the query pops.
    pub source_queue: QueueName,
    /// The queue `.to()` pushes into, when there is one.
    pub sink_queue: Option<QueueName>,
    /// The operator chain's hash: another one for a known name is a conflict.
    pub config_hash: String,
    /// Wipe the query's state and take the new hash when the hash changed.
    pub reset: bool,
}

/// `POST /streams/v1/state/get`: which state rows of one (query, partition) to read.
#[derive(Debug, Clone)]
pub struct StateQuery {
    /// The server's id of the query (from the registration).
    pub query_id: Uuid,
    /// The source partition (the pop answer's `partitionId`).
    pub partition_id: i64,
    /// Only these keys; empty: every key.
    pub keys: Vec<String>,
    /// Only keys starting with this text, literally.
    pub key_prefix: Option<String>,
    /// Only rows whose `value.windowEnd` is a number at or before this (epoch ms).
    pub ripe_at_or_before: Option<i64>,
}

/// The ack of a cycle: the first `count` messages of the leased batch are done.
#[derive(Debug, Clone)]
pub struct CycleAck {
    /// The transaction id of the last message settled (checked against the batch's
    /// message `count` when given).
    pub transaction_id: Option<String>,
    /// The lease the batch was delivered under: the fence.
    pub lease_id: String,
    /// How many messages of the batch, from its start, are done (at least 1).
    pub count: i32,
}

/// `POST /streams/v1/cycle`: state ops, sink pushes and an ack, all or nothing.
#[derive(Debug, Clone)]
pub struct Cycle {
    /// The server's id of the query.
    pub query_id: Uuid,
    /// The source partition.
    pub partition_id: i64,
    /// The consumer group the source was popped by (its cursor row holds the lease).
    pub group: ConsumerGroup,
    /// The state ops, checked, as the JSON array `queen.streams_cycle_v1` reads.
    pub state_ops: Value,
    /// How many state ops there are.
    pub state_op_count: usize,
    /// The sink pushes.
    pub pushes: Vec<PushItem>,
    /// The source ack; `None`: an idle flush (state and pushes only).
    pub ack: Option<CycleAck>,
    /// Release the lease after the ack (`false`: keep it on the batch's tail).
    pub release_lease: bool,
}
