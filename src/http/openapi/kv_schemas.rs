//! The body and error envelope of `POST /api/v1/kv` as the OpenAPI document describes
//! them. Never deserialised: `domain::kv::parse` checks the ops by hand.

#![allow(dead_code)]

use utoipa::ToSchema;

/// `POST /api/v1/kv`.
#[derive(ToSchema)]
pub struct KvBody {
    /// At most 256 ops (and 1024 keys), applied in order as one transaction; one result
    /// each, index-aligned.
    #[schema(max_items = 256)]
    operations: Vec<KvOpBody>,
}

/// One op. Every op has `op` and `ns`; `key` except `getMany` (`keys`) and `getPrefix`
/// (`prefix`). Writes (`put`, `putIfAbsent`, `incr`) need exactly one of `ttlSeconds` or
/// `forever: true`.
#[derive(ToSchema)]
#[schema(rename_all = "camelCase")]
pub struct KvOpBody {
    /// `get`, `getMany`, `getPrefix`, `put`, `putIfAbsent`, `delete`, `check` or `incr`.
    op: String,
    /// Namespace.
    #[schema(pattern = r"^[a-z0-9][a-z0-9._-]{0,63}$")]
    ns: String,
    /// At most 512 bytes.
    key: Option<String>,
    /// `getMany`'s keys.
    keys: Option<Vec<String>>,
    /// `getPrefix`'s non-empty prefix.
    prefix: Option<String>,
    /// `getPrefix`'s exclusive cursor (a previous page's `nextAfter`).
    after: Option<String>,
    /// `getPrefix`'s page size: default 100, clamped to 1..=1000.
    limit: Option<i64>,
    /// `getPrefix` without values.
    keys_only: Option<bool>,
    /// Any JSON (at most 64 KiB), for `put` and `putIfAbsent`.
    #[schema(value_type = Object)]
    value: Option<serde_json::Value>,
    /// Seconds to live (> 0).
    ttl_seconds: Option<i64>,
    /// Never expires.
    forever: Option<bool>,
    /// Compare-and-set: 0 = must not exist, N = must be at version N (`check` needs it).
    #[schema(minimum = 0)]
    expect: Option<i64>,
    /// `incr`'s addend (default 1).
    delta: Option<f64>,
    /// `incr`'s least allowed result: refused (`limit`), not capped.
    min: Option<f64>,
    /// `incr`'s greatest allowed result: refused (`limit`), not capped.
    max: Option<f64>,
    /// A lost precondition rolls the whole batch back.
    required: Option<bool>,
}

/// The KV error envelope.
#[derive(ToSchema)]
pub struct KvErrorBody {
    /// Stable code: `bad_request`, `too_large`, `forbidden`, `unavailable`,
    /// `kv_outcome_unknown`.
    error: String,
    /// Identifier of the fault (`namespace`, `expiry`, `duplicate_key`, ...).
    reason: String,
    /// Prose.
    detail: String,
}
