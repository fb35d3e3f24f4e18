//! The bounds of one timers call, checked before anything reaches the database.

/// Ops in one call at most.
pub const MAX_OPS: usize = 256;
/// Bytes of a timer key (and of a list's `after` cursor) at most.
pub const MAX_KEY_BYTES: usize = 512;
/// Bytes of a `txn` at most.
pub const MAX_TXN_BYTES: usize = 256;
/// Bytes of a payload at most, after base64 and zstd are undone: the message it becomes.
pub const MAX_PAYLOAD_BYTES: usize = 1024 * 1024;
/// The longest delay: ninety days.
pub const MAX_DELAY_MS: i64 = 90 * 24 * 3600 * 1000;
/// Rows of a list page when it names no `limit`.
pub const LIST_LIMIT_DEFAULT: i64 = 100;
/// Rows of a list page at most: a larger `limit` is clamped, not refused.
pub const LIST_LIMIT_MAX: i64 = 1000;

/// Fields a caller may not send: the broker owns them (the client refuses them too).
pub const SERVER_OWNED: &[&str] = &[
    "producerSub",
    "producer_sub",
    "messageId",
    "message_id",
    "tenant",
    "tenantId",
    "tenant_id",
    "deliverAt",
    "deliver_at",
    "delaySeconds",
    "delay_seconds",
    "attempts",
    "claimToken",
    "claim_token",
    "claimedUntil",
    "claimed_until",
];

/// Whether `field` is the broker's to set: a listed name or any name starting with `_`.
pub fn is_server_owned(field: &str) -> bool {
    field.starts_with('_') || SERVER_OWNED.contains(&field)
}
