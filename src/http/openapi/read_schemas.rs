//! The request bodies of the read views (`POST /api/v1/fetch`,
//! `POST /api/v1/partitions/changed`) as the OpenAPI document describes them. Like
//! [`super::schemas`], never deserialised: `http::reads` parses the bodies by hand.

#![allow(dead_code)]

use utoipa::ToSchema;

/// `POST /api/v1/fetch`.
#[derive(ToSchema)]
#[schema(rename_all = "camelCase")]
pub struct FetchBody {
    /// At most 1024 entries; one answer entry each, in order.
    #[schema(max_items = 1024)]
    entries: Vec<FetchEntry>,
    /// Byte budget of the whole call (rendered records), clamped to 1..=16 MiB; default 8
    /// MiB. The call's first record is delivered whatever its size.
    max_bytes: Option<i64>,
}

/// One offset read.
#[derive(ToSchema)]
#[schema(rename_all = "camelCase")]
pub struct FetchEntry {
    /// Queue name.
    #[schema(pattern = r"^[^/?#\u0000-\u001f\u007f-\u009f]+$", min_length = 1)]
    queue: String,
    /// Partition name.
    #[schema(pattern = r"^[^/?#\u0000-\u001f\u007f-\u009f]+$", min_length = 1)]
    partition: String,
    /// First offset wanted (default 0); `highWatermark` is valid and answers no records.
    #[schema(minimum = 0)]
    offset: Option<i64>,
    /// Byte budget of this entry, clamped to 1..= the call's; default 8 MiB.
    max_bytes: Option<i64>,
}

/// `POST /api/v1/partitions/changed`.
#[derive(ToSchema)]
pub struct ChangedBody {
    /// At most 64 entries (queues); one answer entry each, in order.
    #[schema(max_items = 64)]
    entries: Vec<ChangedEntry>,
}

/// One page of one queue's partitions.
#[derive(ToSchema)]
pub struct ChangedEntry {
    /// Queue name.
    #[schema(pattern = r"^[^/?#\u0000-\u001f\u007f-\u009f]+$", min_length = 1)]
    queue: String,
    /// Partitions in the page, clamped to 1..=1000; default 1000.
    limit: Option<i64>,
    /// ISO-8601 time (no zone: UTC): only partitions written at or after it. Pass the
    /// previous pass's `safeTime`.
    since: Option<String>,
    /// The previous page's `next`, unchanged.
    after: Option<String>,
}
