//! Checks a timers call's `operations` and turns them into a [`TimerBatch`], or says what
//! is wrong. Nothing here touches the database: a refused call changes nothing. Every
//! refusal is a 400 (the route's envelope): a malformed op, a server-owned field, more
//! than [`MAX_OPS`] ops, one key twice in a call.

use std::collections::HashSet;
use std::io::Read;

use base64::Engine;
use serde_json::{Map, Value};
use uuid::Uuid;

use super::limits::{
    is_server_owned, MAX_DELAY_MS, MAX_KEY_BYTES, MAX_OPS, MAX_PAYLOAD_BYTES, MAX_TXN_BYTES,
};
use super::ops::{TimerBatch, TimerOp, TimerOpKind};
use crate::domain::{PartitionName, QueueName};

/// Why a call was refused before it ran.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{detail}")]
pub struct TimerInputError {
    /// A stable identifier of the fault (`server_owned`, `too_many_ops`, `duplicate_key`,
    /// `payload`, ...).
    pub reason: &'static str,
    /// Prose for a person, naming the op.
    pub detail: String,
}

fn refuse(reason: &'static str, detail: impl Into<String>) -> TimerInputError {
    TimerInputError {
        reason,
        detail: detail.into(),
    }
}

/// Checks `operations` (the call body's array) and answers the batch.
pub fn parse_ops(operations: &Value) -> Result<TimerBatch, TimerInputError> {
    let Some(list) = operations.as_array() else {
        return Err(refuse("operations", "`operations` must be an array of ops"));
    };
    if list.len() > MAX_OPS {
        return Err(refuse(
            "too_many_ops",
            format!("{} ops in one call; at most {MAX_OPS}", list.len()),
        ));
    }
    let mut seen: HashSet<(String, String)> = HashSet::new();
    let mut batch = TimerBatch::default();
    for (i, raw) in list.iter().enumerate() {
        let op = parse_op(i, raw)?;
        if !seen.insert((op.queue.as_str().to_owned(), op.key.clone())) {
            return Err(refuse(
                "duplicate_key",
                format!(
                    "op {i}: timer key {:?} of queue {:?} appears twice in one call",
                    op.key,
                    op.queue.as_str()
                ),
            ));
        }
        batch.ops.push(op);
    }
    Ok(batch)
}

/// Checks a queue name and a timer key (the routes' path segments too).
pub fn queue_and_key(queue: &str, key: &str) -> Result<(QueueName, String), TimerInputError> {
    let queue = QueueName::parse(queue).map_err(|e| refuse("queue", format!("queue: {e}")))?;
    check_key(key, "timerKey")?;
    Ok((queue, key.to_owned()))
}

/// A key or cursor: non-empty, at most [`MAX_KEY_BYTES`], no NUL (PostgreSQL text).
pub fn check_key(key: &str, field: &str) -> Result<(), TimerInputError> {
    if key.is_empty() || key.len() > MAX_KEY_BYTES || key.contains('\0') {
        return Err(refuse(
            "timer_key",
            format!(
                "{field} must be a non-empty string of at most {MAX_KEY_BYTES} bytes without NUL"
            ),
        ));
    }
    Ok(())
}

const SCHEDULE_FIELDS: &[&str] = &[
    "op",
    "queue",
    "timerKey",
    "payload",
    "delayMs",
    "txn",
    "partition",
    "payloadZstd",
];
const CANCEL_FIELDS: &[&str] = &["op", "queue", "timerKey", "txn"];

fn parse_op(i: usize, raw: &Value) -> Result<TimerOp, TimerInputError> {
    let at = |reason, detail: String| refuse(reason, format!("op {i}: {detail}"));
    let Some(fields) = raw.as_object() else {
        return Err(at("op", "each op must be an object".to_owned()));
    };
    if let Some(owned) = fields.keys().find(|f| is_server_owned(f)) {
        return Err(at(
            "server_owned",
            format!("`{owned}` is set by the broker and cannot be supplied"),
        ));
    }
    let kind = match fields.get("op").and_then(Value::as_str) {
        Some(k @ ("schedule" | "reschedule" | "cancel")) => k,
        _ => {
            return Err(at(
                "op",
                "`op` must be \"schedule\", \"reschedule\" or \"cancel\"".to_owned(),
            ))
        }
    };
    let allowed = if kind == "cancel" {
        CANCEL_FIELDS
    } else {
        SCHEDULE_FIELDS
    };
    if let Some(unknown) = fields.keys().find(|f| !allowed.contains(&f.as_str())) {
        return Err(at(
            "unknown_field",
            format!("`{unknown}` is not a field of a {kind} op"),
        ));
    }
    let text = |name: &str| -> Result<Option<&str>, TimerInputError> {
        match fields.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.as_str())),
            Some(_) => Err(at("type", format!("`{name}` must be a string"))),
        }
    };
    let queue = text("queue")?.unwrap_or_default();
    let key = text("timerKey")?.unwrap_or_default();
    let (queue, key) = queue_and_key(queue, key).map_err(|e| at(e.reason, e.detail))?;
    let txn = match text("txn")? {
        Some(t) if t.is_empty() || t.len() > MAX_TXN_BYTES || t.contains('\0') => {
            return Err(at(
                "txn",
                format!("`txn` must be a non-empty string of at most {MAX_TXN_BYTES} bytes"),
            ))
        }
        t => t.map(str::to_owned),
    };
    if kind == "cancel" {
        return Ok(TimerOp::cancel(queue, key, txn));
    }
    let partition = match text("partition")? {
        None => PartitionName::default_partition(),
        Some(p) => {
            PartitionName::parse(p).map_err(|e| at("partition", format!("partition: {e}")))?
        }
    };
    let delay_ms = delay(fields).map_err(|detail| at("delay", detail))?;
    let zstd = match fields.get("payloadZstd") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(_) => return Err(at("type", "`payloadZstd` must be a boolean".to_owned())),
    };
    let encoded = text("payload")?
        .ok_or_else(|| at("payload", "`payload` (base64) is required".to_owned()))?;
    let payload = payload(encoded, zstd).map_err(|detail| at("payload", detail))?;
    Ok(TimerOp {
        queue,
        key,
        kind: TimerOpKind::Schedule {
            reschedule: kind == "reschedule",
            payload,
            delay_ms,
            txn: txn.unwrap_or_else(|| Uuid::new_v4().to_string()),
            partition,
            message_id: Uuid::now_v7(),
        },
    })
}

/// `delayMs`: an integer (a float with no fraction is taken) within the horizon; 0 or
/// negative means at once.
fn delay(fields: &Map<String, Value>) -> Result<i64, String> {
    let Some(value) = fields.get("delayMs") else {
        return Err("`delayMs` is required".to_owned());
    };
    let ms = match value {
        Value::Number(n) => n.as_i64().or_else(|| {
            n.as_f64()
                .filter(|f| f.fract() == 0.0 && f.abs() < 1e15)
                .map(|f| f as i64)
        }),
        _ => None,
    };
    match ms {
        Some(ms) if ms <= MAX_DELAY_MS => Ok(ms.max(-MAX_DELAY_MS)),
        Some(_) => Err(format!(
            "`delayMs` is past the horizon of {MAX_DELAY_MS} ms (90 days)"
        )),
        None => Err("`delayMs` must be an integer number of milliseconds".to_owned()),
    }
}

/// The message bytes: base64 undone, zstd undone when flagged (bounded), one JSON document.
fn payload(encoded: &str, zstd: bool) -> Result<Vec<u8>, String> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(encoded)
        .map_err(|e| format!("`payload` is not base64: {e}"))?;
    let bytes = if zstd {
        let mut out = Vec::new();
        zstd::stream::read::Decoder::new(bytes.as_slice())
            .map_err(|e| format!("`payload` is not zstd: {e}"))?
            .take(MAX_PAYLOAD_BYTES as u64 + 1)
            .read_to_end(&mut out)
            .map_err(|e| format!("`payload` is not zstd: {e}"))?;
        out
    } else {
        bytes
    };
    if bytes.len() > MAX_PAYLOAD_BYTES {
        return Err(format!("`payload` is over {MAX_PAYLOAD_BYTES} bytes"));
    }
    if serde_json::from_slice::<serde::de::IgnoredAny>(&bytes).is_err() {
        return Err(
            "`payload` must decode to one JSON document (the message it becomes)".to_owned(),
        );
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn op(extra: Value) -> Value {
        let mut base = json!({"op": "schedule", "queue": "q", "timerKey": "a/b",
                              "payload": "eyJhIjoxfQ==", "delayMs": 5, "txn": "t"});
        if let (Some(b), Some(e)) = (base.as_object_mut(), extra.as_object()) {
            b.extend(e.clone());
        }
        base
    }

    #[test]
    fn a_schedule_is_checked_and_normalised() {
        let batch = parse_ops(&json!([op(json!({}))])).expect("valid");
        let sql = batch.to_sql_json();
        assert_eq!(sql[0]["key"], "a/b");
        assert_eq!(sql[0]["partition"], "Default");
        assert_eq!(sql[0]["delayMs"], 5);
        assert_eq!(batch.earliest_delay_ms(), Some(5));
    }

    #[test]
    fn refusals_name_their_reason() {
        let cases = [
            (json!([op(json!({"messageId": "x"}))]), "server_owned"),
            (json!([op(json!({"_x": 1}))]), "server_owned"),
            (json!([op(json!({"extra": 1}))]), "unknown_field"),
            (json!([op(json!({"payload": "!!"}))]), "payload"),
            (json!([op(json!({"payload": "bm90IGpzb24="}))]), "payload"),
            (json!([op(json!({"delayMs": "5"}))]), "delay"),
            (json!([op(json!({"delayMs": MAX_DELAY_MS + 1}))]), "delay"),
            (json!([op(json!({"timerKey": ""}))]), "timer_key"),
            (json!([op(json!({"queue": ""}))]), "queue"),
            (json!([op(json!({"op": "fire"}))]), "op"),
            (json!([op(json!({})), op(json!({}))]), "duplicate_key"),
            (json!({}), "operations"),
        ];
        for (ops, reason) in cases {
            assert_eq!(
                parse_ops(&ops).expect_err("refused").reason,
                reason,
                "{ops}"
            );
        }
        let many: Vec<Value> = (0..=MAX_OPS)
            .map(|k| op(json!({"timerKey": k.to_string()})))
            .collect();
        assert_eq!(
            parse_ops(&Value::Array(many)).expect_err("refused").reason,
            "too_many_ops"
        );
    }

    #[test]
    fn a_zstd_payload_is_decompressed() {
        let packed = zstd::encode_all(&b"{\"z\":1}"[..], 3).expect("zstd");
        let encoded = base64::engine::general_purpose::STANDARD.encode(packed);
        let batch = parse_ops(&json!([op(
            json!({"payload": encoded, "payloadZstd": true})
        )]))
        .expect("valid");
        match &batch.ops[0].kind {
            TimerOpKind::Schedule { payload, .. } => assert_eq!(payload, b"{\"z\":1}"),
            TimerOpKind::Cancel { .. } => panic!("a schedule"),
        }
    }
}
