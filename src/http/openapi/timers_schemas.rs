//! The body of `POST /api/v1/timers` as the OpenAPI document describes it (its errors use
//! `kv_schemas::KvErrorBody`). Never deserialised: `domain::timers::parse` checks the ops
//! by hand.

#![allow(dead_code)]

use utoipa::ToSchema;

/// `POST /api/v1/timers`.
#[derive(ToSchema)]
pub struct TimersBody {
    /// At most 256 ops, no (queue, timerKey) twice; applied in one transaction; one result
    /// each, index-aligned.
    #[schema(max_items = 256)]
    operations: Vec<TimerOpBody>,
}

/// One op. Server-owned fields (`messageId`, `deliverAt`, `tenant`, `attempts`, ... and
/// any name starting with `_`) are refused with 400.
#[derive(ToSchema)]
#[schema(rename_all = "camelCase")]
pub struct TimerOpBody {
    /// `schedule`, `reschedule` (the same upsert) or `cancel`.
    op: String,
    /// The destination queue (created at the fire when missing).
    queue: String,
    /// The timer's key in the queue: non-empty, at most 512 bytes, may hold `/`.
    timer_key: String,
    /// Schedules: base64 of one JSON document, the message's payload (at most 1 MiB).
    payload: Option<String>,
    /// Schedules: milliseconds from the broker's (PostgreSQL's) now; 0 or negative fires
    /// at once; at most 90 days.
    delay_ms: Option<i64>,
    /// The message's transactionId (minted when absent); a cancel's is echoed on `absent`.
    txn: Option<String>,
    /// Schedules: the destination partition (default `Default`).
    partition: Option<String>,
    /// Schedules: the payload is zstd-compressed (the broker decompresses it).
    payload_zstd: Option<bool>,
}
