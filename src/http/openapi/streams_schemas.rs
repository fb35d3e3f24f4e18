//! The bodies of `/streams/v1/...` as the OpenAPI document describes them. Never
//! deserialised: `domain::streams::parse` checks them by hand.

#![allow(dead_code)]

use serde_json::Value;
use utoipa::ToSchema;

/// `POST /streams/v1/queries`.
#[derive(ToSchema)]
pub struct RegisterBody {
    /// The query's name (the client's `query_id`), at most 512 bytes.
    name: String,
    /// The queue the query pops.
    source_queue: String,
    /// The queue `.to()` pushes into.
    sink_queue: Option<String>,
    /// The operator chain's hash; another one for a known name is a 409 unless `reset`.
    config_hash: String,
    /// On a hash change: wipe the query's state and record the new hash.
    reset: Option<bool>,
}

/// `POST /streams/v1/state/get`.
#[derive(ToSchema)]
pub struct StateGetBody {
    /// The registration's `query_id`.
    query_id: String,
    /// The source partition: the pop answer's `partitionId`.
    partition_id: String,
    /// Only these keys; empty or absent: every key.
    keys: Option<Vec<String>>,
    /// Only keys starting with this text, literally (`%` and `_` are plain characters).
    key_prefix: Option<String>,
    /// Only rows whose `value.windowEnd` is a number at or before this (epoch ms).
    ripe_at_or_before: Option<i64>,
}

/// `POST /streams/v1/cycle`.
#[derive(ToSchema)]
pub struct CycleBody {
    /// The registration's `query_id`.
    query_id: String,
    /// The source partition: the pop answer's `partitionId`.
    partition_id: String,
    /// The group the source was popped by (its cursor holds the lease).
    consumer_group: String,
    /// `{type: "upsert", key, value}` or `{type: "delete", key}`, in order; keys at most
    /// 1024 bytes.
    state_ops: Option<Vec<Value>>,
    /// `{queue, partition, payload}`: pushed as `/api/v1/push` pushes them.
    push_items: Option<Vec<Value>>,
    /// Settles the first `count` messages of the leased batch, or null (an idle flush).
    ack: Option<CycleAckBody>,
    /// Default true: release the lease; false: keep it on the batch's tail.
    release_lease: Option<bool>,
}

/// The ack of a cycle.
#[derive(ToSchema)]
#[schema(rename_all = "camelCase")]
pub struct CycleAckBody {
    /// The transaction id of message `count` of the batch (checked when given).
    transaction_id: Option<String>,
    /// The lease the batch was delivered under.
    lease_id: String,
    /// `completed` (the only status).
    status: Option<String>,
    /// How many messages of the batch, from its start, are done.
    #[schema(minimum = 1)]
    count: i64,
}
