//! The body of `POST /api/v1/locks` as the OpenAPI document describes it (its errors use
//! `kv_schemas::KvErrorBody`). Never deserialised: `domain::locks::parse` checks the ops by
//! hand.

#![allow(dead_code)]

use utoipa::ToSchema;

/// `POST /api/v1/locks`.
#[derive(ToSchema)]
pub struct LocksBody {
    /// At most 64 ops, each on a different lock; independent (not all-or-nothing); one
    /// result each, index-aligned.
    #[schema(max_items = 64)]
    operations: Vec<LockOpBody>,
}

/// One op. Every op has `op` and `name`.
#[derive(ToSchema)]
#[schema(rename_all = "camelCase")]
pub struct LockOpBody {
    /// `acquire`, `renew`, `release` or `get`.
    op: String,
    /// The lock: non-empty, at most 256 bytes, no control character, no `#`.
    name: String,
    /// The permit's lifetime in seconds (> 0), for `acquire` and `renew`; no `forever`.
    #[schema(minimum = 1)]
    ttl_seconds: Option<i64>,
    /// The holder (at most 256 bytes): makes a resent `acquire` or `renew` safe.
    owner: Option<String>,
    /// `acquire`: permits of the lock, 1 (default) to 1024; the same on every call.
    #[schema(minimum = 1, maximum = 1024)]
    limit: Option<i64>,
    /// `renew` and `release`: the permit's current token.
    #[schema(minimum = 1)]
    token: Option<i64>,
    /// `renew` and `release`: the permit's slot (default 0).
    #[schema(minimum = 0, maximum = 1023)]
    slot: Option<i64>,
}
