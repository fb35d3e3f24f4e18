//! The request bodies as the OpenAPI document describes them.
//!
//! Handlers read their bodies loosely (every field an optional JSON value, checked by hand so
//! each mistake gets its own 400 text); these types only describe the accepted shape for
//! clients and property-based testers. They are never deserialised.

#![allow(dead_code)]

use serde_json::Value;
use utoipa::ToSchema;

/// Every error answer: `{"error": "<text>"}` (a missing route adds `path`).
#[derive(ToSchema)]
pub struct ErrorBody {
    /// What went wrong, in the wire contract's words.
    error: String,
    /// The path asked for (404 `no_such_route` only).
    path: Option<String>,
}

/// `POST /api/v1/push` (JSON form).
#[derive(ToSchema)]
pub struct PushBody {
    /// The messages, in order.
    items: Vec<PushItem>,
}

/// One message to push.
#[derive(ToSchema)]
#[schema(rename_all = "camelCase")]
pub struct PushItem {
    /// Queue name (created on first push).
    #[schema(pattern = r"^[^/?#\u0000-\u001f\u007f-\u009f]+$", min_length = 1)]
    queue: String,
    /// Partition name (`Default` when absent).
    #[schema(pattern = r"^[^/?#\u0000-\u001f\u007f-\u009f]+$", min_length = 1)]
    partition: Option<String>,
    /// Any JSON value.
    #[schema(value_type = Value)]
    payload: Value,
    /// Client-chosen id; a repeat in the same partition answers `duplicate`.
    transaction_id: Option<String>,
    /// A UUID grouping traces.
    #[schema(
        pattern = "^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$"
    )]
    trace_id: Option<String>,
}

/// `POST /api/v1/ack`: one acknowledgement (also an item of a batch).
#[derive(ToSchema)]
#[schema(rename_all = "camelCase")]
pub struct AckBody {
    /// The message's transaction id, as popped.
    #[schema(min_length = 1)]
    transaction_id: String,
    /// The message's partition id (a UUID), as popped.
    #[schema(pattern = "^[1-9][0-9]{0,17}$")]
    partition_id: String,
    /// `completed` (default), `failed`, `retry` or `dlq`.
    #[schema(pattern = "^(completed|failed|retry|dlq)?$")]
    status: Option<String>,
    /// Why it failed (kept with a dead letter).
    error: Option<String>,
    /// The group that popped it (absent: queue mode).
    #[schema(pattern = r"^[^/?#\u0000-\u001f\u007f-\u009f]+$", min_length = 1)]
    consumer_group: Option<String>,
    /// The lease of the pop (a UUID).
    lease_id: Option<String>,
}

/// `POST /api/v1/ack/batch`.
#[derive(ToSchema)]
#[schema(rename_all = "camelCase")]
pub struct AckBatchBody {
    /// The acknowledgements.
    acknowledgments: Vec<AckBody>,
    /// Default group of every item.
    #[schema(pattern = r"^[^/?#\u0000-\u001f\u007f-\u009f]+$", min_length = 1)]
    consumer_group: Option<String>,
}

/// `POST /api/v1/transaction`.
#[derive(ToSchema)]
#[schema(rename_all = "camelCase")]
pub struct TransactionBody {
    /// `{"type": "push", "items": [...]}` or `{"type": "ack", ...ack fields}`, in order.
    #[schema(value_type = Vec<Object>)]
    operations: Vec<Value>,
    /// Leases (UUIDs) that must all be live.
    required_leases: Option<Vec<String>>,
    /// KV ops (those of `POST /api/v1/kv` except `getPrefix`) run in the same transaction;
    /// a lost `required` op answers `reason: "kv_precondition"` with nothing applied.
    #[schema(value_type = Option<Vec<Object>>)]
    kv: Option<Vec<Value>>,
    /// Timer ops (those of `POST /api/v1/timers`) run in the same transaction; their
    /// results follow the `kv` rider's.
    #[schema(value_type = Option<Vec<Object>>)]
    timers: Option<Vec<Value>>,
}

/// `POST /api/v1/configure`.
#[derive(ToSchema)]
pub struct ConfigureBody {
    /// Queue name.
    #[schema(pattern = r"^[^/?#\u0000-\u001f\u007f-\u009f]+$", min_length = 1)]
    queue: String,
    /// Namespace the queue belongs to (for namespace pops).
    namespace: Option<String>,
    /// Task the queue belongs to (for task pops).
    task: Option<String>,
    /// The queue's options; unknown keys are kept as they are.
    options: Option<QueueOptionsBody>,
}

/// A queue's options (every one optional; ranges are enforced with a 400).
#[derive(ToSchema)]
#[schema(rename_all = "camelCase")]
pub struct QueueOptionsBody {
    /// Seconds a pop's lease lasts (1 to 86400).
    #[schema(minimum = 1, maximum = 86400)]
    lease_time: Option<i64>,
    /// Retries before a dead letter (0 to 10000): failed acks and expired leases count.
    #[schema(minimum = 0, maximum = 10000)]
    retry_limit: Option<i64>,
    /// Higher pops first across queues.
    #[schema(minimum = -1000000, maximum = 1000000)]
    priority: Option<i64>,
    /// Seconds a message waits before it can be popped.
    #[schema(minimum = 0, maximum = 31536000)]
    delayed_processing: Option<i64>,
    /// Seconds a partition waits after its last push before it is popped.
    #[schema(minimum = 0, maximum = 86400)]
    window_buffer: Option<i64>,
    /// Milliseconds after a failed ack before its partition is offered again (0: at once).
    #[schema(minimum = 0, maximum = 86400000)]
    retry_delay: Option<i64>,
    /// Most messages kept.
    #[schema(minimum = 0, maximum = 2147483647)]
    max_size: Option<i64>,
    /// Seconds after its push a message may still be delivered; older ones are
    /// dead-lettered or skipped (0: forever).
    #[schema(minimum = 0, maximum = 2147483647)]
    ttl: Option<i64>,
    /// Whether old messages are removed.
    retention_enabled: Option<bool>,
    /// Seconds messages are kept.
    #[schema(minimum = 0, maximum = 3_153_600_000_i64)]
    retention_seconds: Option<i64>,
    /// Seconds completed messages are kept.
    #[schema(minimum = 0, maximum = 3_153_600_000_i64)]
    completed_retention_seconds: Option<i64>,
    /// Whether the queue keeps dead letters at all (not set: yes); false skips instead.
    dead_letter_queue: Option<bool>,
    /// Whether a message whose retries are spent is dead-lettered (not set: yes) or
    /// skipped.
    dlq_after_max_retries: Option<bool>,
    /// Seal payloads at rest (needs `QUEEN_ENCRYPTION_KEY`).
    encryption_enabled: Option<bool>,
    /// Seconds a visible message (push + delayedProcessing) may wait for delivery; longer
    /// ones are dead-lettered or skipped (0: forever).
    #[schema(minimum = 0, maximum = 2147483647)]
    max_wait_time_seconds: Option<i64>,
    /// Milliseconds an under-full claim is held to fill.
    #[schema(minimum = 0, maximum = 60000)]
    min_pop_wait_time: Option<i64>,
}

/// `POST /api/v1/system/maintenance`: either switch, or both.
#[derive(ToSchema)]
pub struct MaintenanceBody {
    /// `true` makes every pop on every node answer 204.
    pop: Option<bool>,
    /// `true` sends every push to its node's spool (answered `buffered`); `false` replays
    /// the spools.
    push: Option<bool>,
}

/// `POST /api/v1/consumer-groups/{group}/queues/{queue}/seek`: one of the two.
#[derive(ToSchema)]
#[schema(rename_all = "camelCase")]
pub struct SeekBody {
    /// Move past every message.
    to_end: Option<bool>,
    /// Move to the first message pushed at or after this ISO-8601 time.
    #[schema(format = DateTime)]
    timestamp: Option<String>,
}

/// `POST /api/v1/consumer-groups/{group}/subscription`.
#[derive(ToSchema)]
#[schema(rename_all = "camelCase")]
pub struct SubscriptionBody {
    /// ISO-8601 time where cursors created later start.
    #[schema(format = DateTime)]
    subscription_timestamp: String,
}

/// `POST /api/v1/traces`.
#[derive(ToSchema)]
#[schema(rename_all = "camelCase")]
pub struct TraceBody {
    /// The message's transaction id.
    #[schema(min_length = 1)]
    transaction_id: String,
    /// The message's partition id (a UUID).
    #[schema(pattern = "^[1-9][0-9]{0,17}$")]
    partition_id: String,
    /// The group that handled it.
    #[schema(pattern = r"^[^/?#\u0000-\u001f\u007f-\u009f]+$", min_length = 1)]
    consumer_group: Option<String>,
    /// Names the event is filed under (at most 32, each 1 to 256 bytes).
    #[schema(max_items = 32)]
    trace_names: Option<Vec<String>>,
    /// What happened (1 to 256 bytes).
    #[schema(min_length = 1, max_length = 64)]
    event_type: Option<String>,
    /// Any JSON.
    #[schema(value_type = Option<Object>)]
    data: Option<Value>,
    /// Who recorded it (1 to 256 bytes).
    #[schema(min_length = 1, max_length = 64)]
    worker_id: Option<String>,
}
