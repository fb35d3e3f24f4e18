//! The admin handlers' input readers: names and ids from the path, timestamps from a query
//! or a body. Each answers a 400 naming what is wrong, so nothing is touched on bad input.

use chrono::{DateTime, NaiveDate, NaiveDateTime, Utc};

use crate::domain::{ConsumerGroup, QueueName};
use crate::http::error::ApiError;
use crate::http::query::Query;

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
    query: &Query,
    name: &str,
) -> Result<Option<DateTime<Utc>>, ApiError> {
    query.text(name).map(|raw| timestamp(name, raw)).transpose()
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
