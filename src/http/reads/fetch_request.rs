//! The body of `POST /api/v1/fetch`, parsed at the edge: `{entries: [{queue, partition,
//! offset, maxBytes}], maxBytes}`. Every mistake is a 400 naming the field; byte budgets
//! are clamped, never refused.

use serde_json::Value;

use crate::domain::{PartitionName, QueueName};
use crate::http::error::ApiError;

/// Most entries one call may name (the published client sends at most 1000 and says the
/// broker refuses more than 1024).
pub const MAX_ENTRIES: usize = 1024;

/// The budget of an entry or a call that names none: the published client's default.
pub const DEFAULT_MAX_BYTES: i64 = 8 * 1024 * 1024;

/// The largest budget of an entry or a call: the answer is built in memory, and a client
/// asking more gets it over several calls (it keeps asking from its `nextOffset`).
pub const MAX_CALL_BYTES: i64 = 16 * 1024 * 1024;

/// One entry.
#[derive(Debug, Clone)]
pub struct FetchEntry {
    /// The queue.
    pub queue: QueueName,
    /// The partition.
    pub partition: PartitionName,
    /// The first offset wanted.
    pub offset: i64,
    /// The entry's byte budget, clamped to `1..=` the call's.
    pub max_bytes: i64,
}

/// A parsed call.
#[derive(Debug, Clone)]
pub struct FetchRequest {
    /// The entries, in order.
    pub entries: Vec<FetchEntry>,
    /// The call's byte budget, clamped to `1..=MAX_CALL_BYTES`.
    pub max_bytes: i64,
}

impl FetchRequest {
    /// Parses a body; 400 when it is not an object with an `entries` array of at most
    /// [`MAX_ENTRIES`] well-formed entries.
    pub fn parse(body: &[u8]) -> Result<Self, ApiError> {
        let value: Value = crate::http::body::parse_json(body)?;
        let Some(object) = value.as_object() else {
            return Err(ApiError::bad_request("request body must be a JSON object"));
        };
        let max_bytes = budget(object.get("maxBytes"), "maxBytes", MAX_CALL_BYTES)?;
        let Some(list) = object.get("entries").and_then(Value::as_array) else {
            return Err(ApiError::bad_request("entries must be an array"));
        };
        if list.len() > MAX_ENTRIES {
            return Err(ApiError::bad_request(format!(
                "entries holds {} entries; at most {MAX_ENTRIES} per call",
                list.len()
            )));
        }
        let entries = list
            .iter()
            .enumerate()
            .map(|(i, e)| entry(i, e, max_bytes))
            .collect::<Result<_, _>>()?;
        Ok(FetchRequest { entries, max_bytes })
    }
}

fn entry(i: usize, value: &Value, call_bytes: i64) -> Result<FetchEntry, ApiError> {
    let bad = |what: &str| ApiError::bad_request(format!("entries[{i}].{what}"));
    let Some(object) = value.as_object() else {
        return Err(ApiError::bad_request(format!(
            "entries[{i}] must be an object"
        )));
    };
    let text = |field: &str| -> Result<String, ApiError> {
        object
            .get(field)
            .and_then(Value::as_str)
            .map(str::to_owned)
            .ok_or_else(|| bad(&format!("{field} must be a string")))
    };
    let queue = QueueName::parse(text("queue")?).map_err(|e| bad(&format!("queue: {e}")))?;
    let partition =
        PartitionName::parse(text("partition")?).map_err(|e| bad(&format!("partition: {e}")))?;
    let offset = match object.get("offset") {
        None | Some(Value::Null) => 0,
        Some(v) => v
            .as_i64()
            .filter(|o| *o >= 0)
            .ok_or_else(|| bad("offset must be a non-negative integer"))?,
    };
    let max_bytes = budget(
        object.get("maxBytes"),
        &format!("entries[{i}].maxBytes"),
        call_bytes,
    )?;
    Ok(FetchEntry {
        queue,
        partition,
        offset,
        max_bytes,
    })
}

/// A byte budget: absent or null is the default, any number is clamped to `1..=ceiling`,
/// anything else is refused.
fn budget(value: Option<&Value>, name: &str, ceiling: i64) -> Result<i64, ApiError> {
    let n = match value {
        None | Some(Value::Null) => return Ok(DEFAULT_MAX_BYTES.min(ceiling)),
        Some(Value::Number(n)) => n,
        Some(_) => return Err(ApiError::bad_request(format!("{name} must be a number"))),
    };
    let clamped = if let Some(i) = n.as_i64() {
        i
    } else if n.as_u64().is_some() {
        i64::MAX
    } else {
        // A fraction or an exponent: its integer part, saturating.
        n.as_f64().unwrap_or(0.0) as i64
    };
    Ok(clamped.clamp(1, ceiling))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(body: &str) -> Result<FetchRequest, ApiError> {
        FetchRequest::parse(body.as_bytes())
    }

    #[test]
    fn budgets_are_clamped_to_one_and_the_ceiling_and_an_entry_to_its_call() {
        let r = parse(
            r#"{"maxBytes": 1e12, "entries": [
                {"queue":"q","partition":"p","offset":0,"maxBytes":-5},
                {"queue":"q","partition":"p","offset":0,"maxBytes":99999999999},
                {"queue":"q","partition":"p"}]}"#,
        )
        .unwrap();
        assert_eq!(r.max_bytes, MAX_CALL_BYTES);
        let got: Vec<i64> = r.entries.iter().map(|e| e.max_bytes).collect();
        assert_eq!(got, [1, MAX_CALL_BYTES, DEFAULT_MAX_BYTES]);
        let r = parse(r#"{"maxBytes": 10, "entries": [{"queue":"q","partition":"p"}]}"#).unwrap();
        assert_eq!(r.entries[0].max_bytes, 10);
    }

    #[test]
    fn malformed_entries_are_refused_with_the_field_named() {
        for (body, says) in [
            (r#"{"entries": 3}"#, "entries must be an array"),
            (r#"{"entries": [1]}"#, "entries[0] must be an object"),
            (
                r#"{"entries": [{"queue":"q","partition":"p","offset":-1}]}"#,
                "entries[0].offset",
            ),
            (
                r#"{"entries": [{"queue":"q","partition":"p","offset":"1"}]}"#,
                "entries[0].offset",
            ),
            (r#"{"entries": [{"partition":"p"}]}"#, "entries[0].queue"),
            (
                r#"{"entries": [{"queue":"q","partition":"p","maxBytes":"x"}]}"#,
                "entries[0].maxBytes must be a number",
            ),
            (
                r#"{"entries": [], "maxBytes": []}"#,
                "maxBytes must be a number",
            ),
        ] {
            let e = parse(body).unwrap_err().to_string();
            assert!(e.contains(says), "{body}: {e}");
        }
    }
}
