//! The tier 2 admin endpoints (wire contract §4): consumer groups, the dead-letter queue and
//! message retry, resources, messages, status and analytics, traces. One file per route family; this file holds their routes and the small
//! readers they share (names from the path, timestamps from a query or body).
//!
//! Every handler parses its input before touching the database, so bad input is a 400 with
//! nothing changed; unknown things are 404s whose texts the contract fixes.

pub mod dlq;
pub mod groups;
pub mod messages;
pub mod resources;
pub mod status;
pub mod traces;

use actix_web::{web, HttpResponse};
use chrono::{DateTime, NaiveDate, NaiveDateTime, Utc};

use super::ApiError;
use crate::domain::{ConsumerGroup, QueueName};
use crate::segment::frame::FLAG_ENCRYPTED;
use crate::segment::{open_blob, slice_frames, Codec};

/// The admin routes. Registered before the core routes' default service; the fixed
/// `lagging` path is registered before `{group}` so it is not read as a group name.
pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::resource("/api/v1/consumer-groups")
            .route(web::get().to(groups::list))
            .default_service(web::to(method_not_allowed)),
    )
    .service(
        web::resource("/api/v1/consumer-groups/lagging")
            .route(web::get().to(groups::lagging))
            .default_service(web::to(method_not_allowed)),
    )
    .service(
        web::resource("/api/v1/consumer-groups/{group}")
            .route(web::get().to(groups::detail))
            .route(web::delete().to(groups::delete))
            .default_service(web::to(method_not_allowed)),
    )
    .service(
        web::resource("/api/v1/consumer-groups/{group}/queues/{queue}")
            .route(web::delete().to(groups::delete_for_queue))
            .default_service(web::to(method_not_allowed)),
    )
    .service(
        web::resource("/api/v1/consumer-groups/{group}/subscription")
            .route(web::post().to(groups::subscription))
            .default_service(web::to(method_not_allowed)),
    )
    .service(
        web::resource("/api/v1/consumer-groups/{group}/queues/{queue}/seek")
            .route(web::post().to(groups::seek))
            .default_service(web::to(method_not_allowed)),
    )
    .service(
        web::resource("/api/v1/dlq")
            .route(web::get().to(dlq::list))
            .default_service(web::to(method_not_allowed)),
    )
    .service(
        web::resource("/api/v1/messages/{partition_id}/{transaction_id}/retry")
            .route(web::post().to(dlq::retry))
            .default_service(web::to(method_not_allowed)),
    )
    .service(
        web::resource("/api/v1/messages")
            .route(web::get().to(messages::list))
            .default_service(web::to(method_not_allowed)),
    )
    .service(
        web::resource("/api/v1/messages/{partition_id}/{transaction_id}")
            .route(web::get().to(messages::detail))
            .route(web::delete().to(messages::delete))
            .default_service(web::to(method_not_allowed)),
    )
    .service(
        web::resource("/api/v1/resources/overview")
            .route(web::get().to(resources::overview))
            .default_service(web::to(method_not_allowed)),
    )
    .service(
        web::resource("/api/v1/resources/queues")
            .route(web::get().to(resources::queues))
            .default_service(web::to(method_not_allowed)),
    )
    .service(
        web::resource("/api/v1/resources/queues/{queue}")
            .route(web::get().to(resources::queue))
            .route(web::delete().to(resources::delete_queue))
            .default_service(web::to(method_not_allowed)),
    )
    .service(
        web::resource("/api/v1/resources/queues/{queue}/depth")
            .route(web::get().to(resources::depth))
            .default_service(web::to(method_not_allowed)),
    )
    .service(
        web::resource("/api/v1/resources/partitions")
            .route(web::get().to(resources::partitions))
            .default_service(web::to(method_not_allowed)),
    )
    .service(
        web::resource("/api/v1/resources/namespaces")
            .route(web::get().to(resources::namespaces))
            .default_service(web::to(method_not_allowed)),
    )
    .service(
        web::resource("/api/v1/resources/tasks")
            .route(web::get().to(resources::tasks))
            .default_service(web::to(method_not_allowed)),
    )
    .service(
        web::resource("/api/v1/status")
            .route(web::get().to(status::status))
            .default_service(web::to(method_not_allowed)),
    )
    .service(
        web::resource("/api/v1/status/queues")
            .route(web::get().to(status::queues))
            .default_service(web::to(method_not_allowed)),
    )
    .service(
        web::resource("/api/v1/status/queues/{queue}")
            .route(web::get().to(status::queue))
            .default_service(web::to(method_not_allowed)),
    )
    .service(
        web::resource("/api/v1/status/analytics")
            .route(web::get().to(status::analytics))
            .default_service(web::to(method_not_allowed)),
    )
    .service(
        web::resource("/api/v1/stats/refresh")
            .route(web::post().to(status::refresh_stats))
            .default_service(web::to(method_not_allowed)),
    )
    .service(
        web::resource("/api/v1/analytics/system-metrics")
            .route(web::get().to(status::system_metrics))
            .default_service(web::to(method_not_allowed)),
    )
    .service(
        web::resource("/api/v1/analytics/worker-metrics")
            .route(web::get().to(status::worker_metrics))
            .default_service(web::to(method_not_allowed)),
    )
    .service(
        web::resource("/api/v1/traces")
            .route(web::post().to(traces::add))
            .default_service(web::to(method_not_allowed)),
    )
    .service(
        web::resource("/api/v1/traces/names")
            .route(web::get().to(traces::names))
            .default_service(web::to(method_not_allowed)),
    )
    .service(
        web::resource("/api/v1/traces/by-name/{name}")
            .route(web::get().to(traces::by_name))
            .default_service(web::to(method_not_allowed)),
    )
    .service(
        web::resource("/api/v1/traces/{partition_id}/{transaction_id}")
            .route(web::get().to(traces::for_message))
            .default_service(web::to(method_not_allowed)),
    );
}

async fn method_not_allowed() -> Result<HttpResponse, ApiError> {
    Err(ApiError::MethodNotAllowed)
}

/// A queue name from the path (400 when it is not a valid name).
pub(crate) fn queue_name(raw: &str) -> Result<QueueName, ApiError> {
    QueueName::parse(raw).map_err(|e| ApiError::bad_request(e.to_string()))
}

/// A consumer group from the path or query; `__QUEUE_MODE__` is queue mode.
pub(crate) fn group_name(raw: &str) -> Result<ConsumerGroup, ApiError> {
    ConsumerGroup::parse(Some(raw)).map_err(|e| ApiError::bad_request(e.to_string()))
}

/// A partition id from the path: a positive decimal integer (400 otherwise).
pub(crate) fn partition_id(raw: &str) -> Result<i64, ApiError> {
    raw.parse::<i64>().ok().filter(|id| *id > 0).ok_or_else(|| {
        ApiError::bad_request(format!(
            "partitionId must be a positive integer, got {raw:?}"
        ))
    })
}

/// A transaction id from the path: non-empty, at most 65535 bytes.
pub(crate) fn transaction_id(raw: &str) -> Result<&str, ApiError> {
    if raw.is_empty() || raw.len() > 65535 {
        return Err(ApiError::bad_request(
            "transactionId must be between 1 and 65535 bytes",
        ));
    }
    Ok(raw)
}

/// An ISO-8601 timestamp: RFC 3339 (`2026-01-02T03:04:05.678Z`, any offset), or without an
/// offset (read as UTC), or a bare date (midnight UTC). `name` is the parameter in the error.
pub(crate) fn timestamp(name: &str, raw: &str) -> Result<DateTime<Utc>, ApiError> {
    let raw = raw.trim();
    if let Ok(t) = DateTime::parse_from_rfc3339(raw) {
        return Ok(t.with_timezone(&Utc));
    }
    for format in [
        "%Y-%m-%dT%H:%M:%S%.f",
        "%Y-%m-%d %H:%M:%S%.f",
        "%Y-%m-%dT%H:%M",
    ] {
        if let Ok(t) = NaiveDateTime::parse_from_str(raw, format) {
            return Ok(t.and_utc());
        }
    }
    if let Ok(d) = NaiveDate::parse_from_str(raw, "%Y-%m-%d") {
        return Ok(d.and_hms_opt(0, 0, 0).expect("midnight exists").and_utc());
    }
    Err(ApiError::bad_request(format!(
        "{name} must be an ISO-8601 timestamp, got {raw:?}"
    )))
}

/// An optional timestamp query parameter.
pub(crate) fn optional_timestamp(
    query: &super::query::Query,
    name: &str,
) -> Result<Option<DateTime<Utc>>, ApiError> {
    query.text(name).map(|raw| timestamp(name, raw)).transpose()
}

/// One message read back out of a stored segment, owned.
pub(crate) struct StoredMessage {
    /// The message id.
    pub message_id: uuid::Uuid,
    /// The trace id, if any.
    pub trace_id: Option<uuid::Uuid>,
    /// The producer of the frame, if any.
    pub producer: Option<String>,
    /// The payload as JSON (`null` for an encrypted or empty payload).
    pub payload: serde_json::Value,
    /// The payload bytes exactly as stored.
    pub payload_bytes: Vec<u8>,
    /// True when the payload is ciphertext (frame flag 4).
    pub encrypted: bool,
}

/// Opens a segment blob (zstd in Rust, never in SQL) and reads its frame `index`.
pub(crate) fn frame_at(codec: i16, blob: &[u8], index: i64) -> Result<StoredMessage, ApiError> {
    let corrupt = |e: crate::segment::BlobError| ApiError::Corrupt(Box::new(e));
    let index =
        usize::try_from(index).map_err(|_| corrupt(crate::segment::BlobError::ShortSegment))?;
    let raw = open_blob(Codec::from_i16(codec).map_err(corrupt)?, blob).map_err(corrupt)?;
    let frames = slice_frames(&raw, index, 1).map_err(corrupt)?;
    let frame = frames[0];
    let payload = if frame.flags & FLAG_ENCRYPTED != 0 || frame.payload.is_empty() {
        serde_json::Value::Null
    } else {
        serde_json::from_slice(frame.payload).unwrap_or(serde_json::Value::Null)
    };
    Ok(StoredMessage {
        message_id: frame.message_id,
        trace_id: frame.trace_id,
        producer: frame.producer.map(str::to_owned),
        payload,
        payload_bytes: frame.payload.to_vec(),
        encrypted: frame.flags & FLAG_ENCRYPTED != 0,
    })
}

/// The contract's time format: UTC, three fractional digits.
pub(crate) fn iso(t: &DateTime<Utc>) -> String {
    t.format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_parse_with_or_without_offset_and_garbage_is_a_bad_request() {
        let z = timestamp("t", "2026-01-02T03:04:05.678Z").unwrap();
        assert_eq!(z.to_rfc3339(), "2026-01-02T03:04:05.678+00:00");
        let plus = timestamp("t", "2026-01-02T05:04:05+02:00").unwrap();
        assert_eq!(
            plus.timestamp(),
            timestamp("t", "2026-01-02T03:04:05").unwrap().timestamp()
        );
        assert!(timestamp("t", "2026-01-02").is_ok());
        let e = timestamp("from", "yesterday").unwrap_err().to_string();
        assert!(e.contains("from"), "{e}");
    }

    #[test]
    fn partition_ids_must_be_positive_integers() {
        assert_eq!(partition_id("42").unwrap(), 42);
        assert!(partition_id("0").is_err());
        assert!(partition_id("abc").is_err());
        assert!(partition_id("-3").is_err());
    }
}
