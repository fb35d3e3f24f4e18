//! The body of `POST /api/v1/partitions/changed`, parsed at the edge: `{entries: [{queue,
//! limit, since?, after?}]}`. A malformed field is a 400 naming it; `limit` is clamped,
//! never refused.

use chrono::{DateTime, NaiveDateTime, Utc};
use serde_json::Value;

use crate::domain::QueueName;
use crate::http::error::ApiError;

/// Most partitions one page lists (the published client always asks this many).
pub const MAX_LIMIT: i32 = 1000;

/// Most entries (queues) one call may name: each is a statement of its own. The published
/// client sends one.
pub const MAX_ENTRIES: usize = 64;

/// The one fixed-width UTC format of `safeTime` and `lastWriteAt` (microseconds, `Z`):
/// the client keeps the smallest `safeTime` of a pass by comparing strings, and renders
/// its own `datetime`s the same way.
pub const TIME_FORMAT: &str = "%Y-%m-%dT%H:%M:%S%.6fZ";

/// One entry.
#[derive(Debug, Clone)]
pub struct ChangedEntry {
    /// The queue.
    pub queue: QueueName,
    /// Partitions written at or after this time only.
    pub since: Option<DateTime<Utc>>,
    /// The previous page's `next`: partitions named after it only.
    pub after: Option<String>,
    /// Most partitions in the page, `1..=MAX_LIMIT`.
    pub limit: i32,
}

/// Parses a body; 400 when it is not an object with an `entries` array of at most
/// [`MAX_ENTRIES`] well-formed entries.
pub fn parse(body: &[u8]) -> Result<Vec<ChangedEntry>, ApiError> {
    let value: Value = crate::http::body::parse_json(body)?;
    let Some(list) = value.get("entries").and_then(Value::as_array) else {
        return Err(ApiError::bad_request("entries must be an array"));
    };
    if list.len() > MAX_ENTRIES {
        return Err(ApiError::bad_request(format!(
            "entries holds {} entries; at most {MAX_ENTRIES} per call",
            list.len()
        )));
    }
    list.iter().enumerate().map(|(i, e)| entry(i, e)).collect()
}

fn entry(i: usize, value: &Value) -> Result<ChangedEntry, ApiError> {
    let bad = |what: String| ApiError::bad_request(format!("entries[{i}].{what}"));
    let Some(object) = value.as_object() else {
        return Err(ApiError::bad_request(format!(
            "entries[{i}] must be an object"
        )));
    };
    let queue = object
        .get("queue")
        .and_then(Value::as_str)
        .ok_or_else(|| bad("queue must be a string".into()))?;
    let queue = QueueName::parse(queue).map_err(|e| bad(format!("queue: {e}")))?;
    let since = match object.get("since") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(parse_time(s).ok_or_else(|| {
            bad(format!(
                "since is not an ISO-8601 time such as 2026-12-05T12:00:00.123456Z: {s:?}"
            ))
        })?),
        Some(_) => return Err(bad("since must be a string".into())),
    };
    let after = match object.get("after") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) if !s.is_empty() => Some(s.clone()),
        Some(Value::String(_)) => None,
        Some(_) => return Err(bad("after must be a string".into())),
    };
    let limit = match object.get("limit") {
        None | Some(Value::Null) => MAX_LIMIT,
        Some(Value::Number(n)) => {
            let n = n.as_f64().unwrap_or(f64::from(MAX_LIMIT));
            n.clamp(1.0, f64::from(MAX_LIMIT)) as i32
        }
        Some(_) => return Err(bad("limit must be a number".into())),
    };
    Ok(ChangedEntry {
        queue,
        since,
        after,
        limit,
    })
}

/// An ISO-8601 time: RFC 3339 (`Z` or an offset; `T` or a space), or without a zone,
/// which means UTC (as the client reads a naive `datetime`).
pub fn parse_time(s: &str) -> Option<DateTime<Utc>> {
    if let Ok(t) = DateTime::parse_from_rfc3339(s) {
        return Some(t.with_timezone(&Utc));
    }
    ["%Y-%m-%dT%H:%M:%S%.f", "%Y-%m-%d %H:%M:%S%.f"]
        .iter()
        .find_map(|f| NaiveDateTime::parse_from_str(s, f).ok())
        .map(|t| t.and_utc())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn since_reads_the_client_s_format_offsets_and_naive_times_as_utc() {
        let want = parse_time("2026-12-05T12:00:00.123456Z").unwrap();
        for s in [
            "2026-12-05T12:00:00.123456Z",
            "2026-12-05T13:00:00.123456+01:00",
            "2026-12-05T12:00:00.123456",
            "2026-12-05 12:00:00.123456",
        ] {
            assert_eq!(parse_time(s), Some(want), "{s}");
        }
        assert_eq!(
            want.format(TIME_FORMAT).to_string(),
            "2026-12-05T12:00:00.123456Z"
        );
        for s in ["yesterday", "2026-13-05T12:00:00Z", ""] {
            assert_eq!(parse_time(s), None, "{s}");
        }
    }

    #[test]
    fn limit_is_clamped_and_malformed_fields_are_named() {
        let got =
            parse(br#"{"entries":[{"queue":"q","limit":5000},{"queue":"q","limit":0}]}"#).unwrap();
        assert_eq!((got[0].limit, got[1].limit), (MAX_LIMIT, 1));
        for (body, says) in [
            (
                r#"{"entries":[{"queue":"q","since":"soon"}]}"#,
                "entries[0].since",
            ),
            (
                r#"{"entries":[{"queue":"q","since":5}]}"#,
                "since must be a string",
            ),
            (
                r#"{"entries":[{"queue":"q","limit":"x"}]}"#,
                "limit must be a number",
            ),
            (
                r#"{"entries":[{"queue":"q","after":1}]}"#,
                "after must be a string",
            ),
            (r#"{"entries":[{}]}"#, "entries[0].queue"),
            (r#"{}"#, "entries must be an array"),
        ] {
            let e = parse(body.as_bytes()).unwrap_err().to_string();
            assert!(e.contains(says), "{body}: {e}");
        }
    }
}
