//! The query strings as the OpenAPI document describes them.
//!
//! Handlers read their queries through `http::query::Query` (each bad value a 400 naming the
//! parameter); these types only describe them. They are never deserialised.

#![allow(dead_code)]

use utoipa::IntoParams;

/// Pop parameters (every pop route).
#[derive(IntoParams)]
#[into_params(parameter_in = Query)]
#[allow(non_snake_case)]
pub struct PopQuery {
    /// Most messages in the answer, across the claimed partitions (default 200).
    #[param(minimum = 1, maximum = 100000)]
    batch: Option<u32>,
    /// Most partitions claimed at once (default 1).
    #[param(minimum = 1, maximum = 10000)]
    partitions: Option<u32>,
    /// Long-poll until a message arrives or `timeout` passes.
    wait: Option<bool>,
    /// Long-poll deadline in milliseconds.
    #[param(minimum = 0, maximum = 3600000)]
    timeout: Option<u64>,
    /// Consumer group (absent: queue mode).
    #[param(pattern = r"^[^/?#\u0000-\u001f\u007f-\u009f]+$")]
    consumerGroup: Option<String>,
    /// Complete the messages as they are delivered.
    autoAck: Option<bool>,
    /// `all` or `new`: where a new group starts.
    #[param(pattern = "^(all|new)$")]
    subscriptionMode: Option<String>,
    /// `now` or an ISO-8601 time: where a new group starts.
    #[param(pattern = "^now$")]
    subscriptionFrom: Option<String>,
    /// Lease length in seconds, overriding the queue's `leaseTime`.
    #[param(minimum = 1, maximum = 86400)]
    leaseSeconds: Option<u32>,
    /// Deliver only the newest message of each claimed partition (needs a group).
    conflation: Option<bool>,
    /// Let the broker choose `batch` and `partitions`.
    autopilot: Option<bool>,
    /// Answer the framed `QPF1` body.
    frames: Option<bool>,
    /// Namespace of the queues (`/api/v1/pop` only).
    namespace: Option<String>,
    /// Task of the queues (`/api/v1/pop` only).
    task: Option<String>,
}

/// `POST /api/v1/fetch` parameters.
#[derive(IntoParams)]
#[into_params(parameter_in = Query)]
pub struct FetchQuery {
    /// Answer the framed `QPF1` body (`application/x-queen-pop`): the stored segments
    /// whole, budgets counted in stored bytes.
    frames: Option<bool>,
}

/// A page of a listing.
#[derive(IntoParams)]
#[into_params(parameter_in = Query)]
pub struct PageQuery {
    /// Page size.
    #[param(minimum = 1, maximum = 10000)]
    limit: Option<u32>,
    /// Rows skipped.
    #[param(minimum = 0, maximum = 2147483647)]
    offset: Option<u32>,
}

/// `GET /api/v1/resources/queues`.
#[derive(IntoParams)]
#[into_params(parameter_in = Query)]
pub struct QueuesQuery {
    /// Part of the queue name.
    search: Option<String>,
    /// Page size (1 to 10000).
    #[param(minimum = 1, maximum = 10000)]
    limit: Option<u32>,
    /// Rows skipped.
    #[param(minimum = 0, maximum = 2147483647)]
    offset: Option<u32>,
}

/// `GET /api/v1/resources/partitions`.
#[derive(IntoParams)]
#[into_params(parameter_in = Query)]
pub struct PartitionsQuery {
    /// Only this queue's partitions.
    #[param(pattern = r"^[^/?#\u0000-\u001f\u007f-\u009f]+$")]
    queue: Option<String>,
    /// Page size (1 to 10000).
    #[param(minimum = 1, maximum = 10000)]
    limit: Option<u32>,
    /// Rows skipped.
    #[param(minimum = 0, maximum = 2147483647)]
    offset: Option<u32>,
}

/// `GET /api/v1/resources/queues/{queue}/depth`.
#[derive(IntoParams)]
#[into_params(parameter_in = Query)]
pub struct DepthQuery {
    /// A consumer group (absent: queue mode's slowest cursor).
    #[param(pattern = r"^[^/?#\u0000-\u001f\u007f-\u009f]+$")]
    group: Option<String>,
}

/// `GET /api/v1/consumer-groups/lagging`.
#[derive(IntoParams)]
#[into_params(parameter_in = Query)]
#[allow(non_snake_case)]
pub struct LaggingQuery {
    /// Oldest unconsumed message at least this old (default 60).
    #[param(minimum = 0, maximum = 4294967295_i64)]
    minLagSeconds: Option<u32>,
}

/// Consumer-group deletes.
#[derive(IntoParams)]
#[into_params(parameter_in = Query)]
#[allow(non_snake_case)]
pub struct DeleteGroupQuery {
    /// Also forget the subscriptions (default true).
    deleteMetadata: Option<bool>,
}

/// `GET /api/v1/dlq`.
#[derive(IntoParams)]
#[into_params(parameter_in = Query)]
#[allow(non_snake_case)]
pub struct DlqQuery {
    /// Queue name.
    #[param(pattern = r"^[^/?#\u0000-\u001f\u007f-\u009f]+$")]
    queue: Option<String>,
    /// Consumer group.
    #[param(pattern = r"^[^/?#\u0000-\u001f\u007f-\u009f]+$")]
    consumerGroup: Option<String>,
    /// Partition name.
    #[param(pattern = r"^[^/?#\u0000-\u001f\u007f-\u009f]+$")]
    partition: Option<String>,
    /// Failed at or after this ISO-8601 time.
    #[param(format = DateTime)]
    from: Option<String>,
    /// Failed at or before this ISO-8601 time.
    #[param(format = DateTime)]
    to: Option<String>,
    /// Page size (1 to 1000).
    #[param(minimum = 1, maximum = 1000)]
    limit: Option<u32>,
    /// Rows skipped.
    #[param(minimum = 0, maximum = 2147483647)]
    offset: Option<u32>,
}

/// `GET /api/v1/messages`.
#[derive(IntoParams)]
#[into_params(parameter_in = Query)]
pub struct MessagesQuery {
    /// Queue name.
    #[param(pattern = r"^[^/?#\u0000-\u001f\u007f-\u009f]+$")]
    queue: Option<String>,
    /// Partition name.
    #[param(pattern = r"^[^/?#\u0000-\u001f\u007f-\u009f]+$")]
    partition: Option<String>,
    /// Namespace.
    ns: Option<String>,
    /// Task.
    task: Option<String>,
    /// `pending`, `processing` or `completed`.
    #[param(pattern = "^(pending|processing|completed)$")]
    status: Option<String>,
    /// Pushed at or after this ISO-8601 time.
    #[param(format = DateTime)]
    from: Option<String>,
    /// Pushed at or before this ISO-8601 time.
    #[param(format = DateTime)]
    to: Option<String>,
    /// Page size.
    #[param(minimum = 1, maximum = 1000)]
    limit: Option<u32>,
    /// Rows skipped.
    #[param(minimum = 0, maximum = 2147483647)]
    offset: Option<u32>,
}

/// The status routes' window and filters.
#[derive(IntoParams)]
#[into_params(parameter_in = Query)]
pub struct StatusQuery {
    /// Window start, ISO-8601 (default: an hour before `to`).
    #[param(format = DateTime)]
    from: Option<String>,
    /// Window end, ISO-8601 (default: now).
    #[param(format = DateTime)]
    to: Option<String>,
    /// Queue name.
    #[param(pattern = r"^[^/?#\u0000-\u001f\u007f-\u009f]+$")]
    queue: Option<String>,
    /// Namespace.
    namespace: Option<String>,
    /// Task.
    task: Option<String>,
}

/// `GET /api/v1/status/queues`.
#[derive(IntoParams)]
#[into_params(parameter_in = Query)]
pub struct StatusQueuesQuery {
    /// Window start, ISO-8601.
    #[param(format = DateTime)]
    from: Option<String>,
    /// Window end, ISO-8601.
    #[param(format = DateTime)]
    to: Option<String>,
    /// Page size (1 to 10000).
    #[param(minimum = 1, maximum = 10000)]
    limit: Option<u32>,
    /// Rows skipped.
    #[param(minimum = 0, maximum = 2147483647)]
    offset: Option<u32>,
}

/// `GET /api/v1/status/analytics`.
#[derive(IntoParams)]
#[into_params(parameter_in = Query)]
pub struct AnalyticsQuery {
    /// `hour` (default), `day`, `week` or `month`.
    #[param(pattern = "^(hour|day|week|month)$")]
    interval: Option<String>,
    /// Window start, ISO-8601.
    #[param(format = DateTime)]
    from: Option<String>,
    /// Window end, ISO-8601.
    #[param(format = DateTime)]
    to: Option<String>,
}

/// `GET /api/v1/traces/by-name/{name}`.
#[derive(IntoParams)]
#[into_params(parameter_in = Query)]
pub struct TracesByNameQuery {
    /// Recorded at or after this ISO-8601 time.
    #[param(format = DateTime)]
    from: Option<String>,
    /// Recorded at or before this ISO-8601 time.
    #[param(format = DateTime)]
    to: Option<String>,
    /// Page size (1 to 1000).
    #[param(minimum = 1, maximum = 1000)]
    limit: Option<u32>,
    /// Rows skipped.
    #[param(minimum = 0, maximum = 2147483647)]
    offset: Option<u32>,
}

/// `GET /api/v1/traces/names`.
#[derive(IntoParams)]
#[into_params(parameter_in = Query)]
pub struct TraceNamesQuery {
    /// Part of the name.
    search: Option<String>,
    /// Page size (1 to 1000).
    #[param(minimum = 1, maximum = 1000)]
    limit: Option<u32>,
    /// Rows skipped.
    #[param(minimum = 0, maximum = 2147483647)]
    offset: Option<u32>,
}
