//! The checks of the streams calls: every field's type and bounds, before anything runs,
//! so a refused call changes nothing. Errors name the field.

use serde_json::{Map, Value};
use uuid::Uuid;

use super::requests::{Cycle, CycleAck, Registration, StateQuery};
use crate::domain::{ConsumerGroup, PartitionName, PushItem, QueueName};

/// Longest state key, in bytes: keys are a primary key's column.
pub const MAX_STATE_KEY_BYTES: usize = 1024;
/// Longest query name or config hash, in bytes.
pub const MAX_NAME_BYTES: usize = 512;

/// What is wrong with a streams call (a 400 with this text).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct StreamsInputError(pub String);

fn bad(text: impl Into<String>) -> StreamsInputError {
    StreamsInputError(text.into())
}

fn object(body: &Value) -> Result<&Map<String, Value>, StreamsInputError> {
    body.as_object()
        .ok_or_else(|| bad("the body must be a JSON object"))
}

/// A present, non-null field.
fn field<'a>(o: &'a Map<String, Value>, name: &str) -> Option<&'a Value> {
    o.get(name).filter(|v| !v.is_null())
}

fn text<'a>(o: &'a Map<String, Value>, name: &str) -> Result<Option<&'a str>, StreamsInputError> {
    match field(o, name) {
        None => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(_) => Err(bad(format!("{name} must be a string"))),
    }
}

fn required<'a>(o: &'a Map<String, Value>, name: &str) -> Result<&'a str, StreamsInputError> {
    text(o, name)?
        .filter(|s| !s.is_empty())
        .ok_or_else(|| bad(format!("{name} is required")))
}

fn flag(o: &Map<String, Value>, name: &str, default: bool) -> Result<bool, StreamsInputError> {
    match field(o, name) {
        None => Ok(default),
        Some(Value::Bool(b)) => Ok(*b),
        Some(_) => Err(bad(format!("{name} must be a boolean"))),
    }
}

fn queue(text: &str, name: &str) -> Result<QueueName, StreamsInputError> {
    QueueName::parse(text).map_err(|e| bad(format!("{name}: {e}")))
}

fn query_id(o: &Map<String, Value>) -> Result<Uuid, StreamsInputError> {
    Uuid::parse_str(required(o, "query_id")?)
        .map_err(|_| bad("query_id must be the id the registration answered"))
}

/// The partition id as the pop answered it: a decimal string (a number is taken too).
fn partition_id(o: &Map<String, Value>) -> Result<i64, StreamsInputError> {
    let parsed = match field(o, "partition_id") {
        Some(Value::String(s)) => s.parse::<i64>().ok(),
        Some(Value::Number(n)) => n.as_i64(),
        _ => None,
    };
    parsed
        .filter(|id| *id >= 0)
        .ok_or_else(|| bad("partition_id must be the pop answer's partitionId"))
}

/// Checks a registration.
pub fn parse_registration(body: &Value) -> Result<Registration, StreamsInputError> {
    let o = object(body)?;
    let name = required(o, "name")?;
    let config_hash = required(o, "config_hash")?;
    if name.len() > MAX_NAME_BYTES || config_hash.len() > MAX_NAME_BYTES {
        return Err(bad(format!(
            "name and config_hash are at most {MAX_NAME_BYTES} bytes"
        )));
    }
    Ok(Registration {
        name: name.to_owned(),
        source_queue: queue(required(o, "source_queue")?, "source_queue")?,
        sink_queue: text(o, "sink_queue")?
            .filter(|s| !s.is_empty())
            .map(|s| queue(s, "sink_queue"))
            .transpose()?,
        config_hash: config_hash.to_owned(),
        reset: flag(o, "reset", false)?,
    })
}

/// Checks a state read.
pub fn parse_state_query(body: &Value) -> Result<StateQuery, StreamsInputError> {
    let o = object(body)?;
    let keys = match field(o, "keys") {
        None => Vec::new(),
        Some(Value::Array(keys)) => keys
            .iter()
            .map(|k| k.as_str().map(str::to_owned))
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| bad("keys must be an array of strings"))?,
        Some(_) => return Err(bad("keys must be an array of strings")),
    };
    let ripe_at_or_before = match field(o, "ripe_at_or_before") {
        None => None,
        Some(v) => Some(
            v.as_i64()
                .or_else(|| {
                    v.as_f64()
                        .filter(|f| f.is_finite())
                        .map(|f| f.floor() as i64)
                })
                .ok_or_else(|| bad("ripe_at_or_before must be a number (epoch ms)"))?,
        ),
    };
    Ok(StateQuery {
        query_id: query_id(o)?,
        partition_id: partition_id(o)?,
        keys,
        key_prefix: text(o, "key_prefix")?.map(str::to_owned),
        ripe_at_or_before,
    })
}

/// Checks a cycle: its state ops, pushes and ack.
pub fn parse_cycle(body: &Value) -> Result<Cycle, StreamsInputError> {
    let o = object(body)?;
    let query_id = query_id(o)?;
    let group = ConsumerGroup::parse(Some(required(o, "consumer_group")?))
        .map_err(|e| bad(format!("consumer_group: {e}")))?;
    let ops = array(o, "state_ops")?;
    for (i, op) in ops.iter().enumerate() {
        state_op(op).map_err(|e| bad(format!("state_ops[{i}]: {e}")))?;
    }
    let pushes = array(o, "push_items")?
        .iter()
        .enumerate()
        .map(|(i, item)| push_item(item).map_err(|e| bad(format!("push_items[{i}]: {e}"))))
        .collect::<Result<Vec<_>, _>>()?;
    let ack = match field(o, "ack") {
        None => None,
        Some(ack) => Some(cycle_ack(ack).map_err(|e| bad(format!("ack: {e}")))?),
    };
    Ok(Cycle {
        query_id,
        partition_id: partition_id(o)?,
        group,
        state_op_count: ops.len(),
        state_ops: Value::Array(ops.to_vec()),
        pushes,
        ack,
        release_lease: flag(o, "release_lease", true)?,
    })
}

fn array<'a>(o: &'a Map<String, Value>, name: &str) -> Result<&'a [Value], StreamsInputError> {
    match field(o, name) {
        None => Ok(&[]),
        Some(Value::Array(items)) => Ok(items),
        Some(_) => Err(bad(format!("{name} must be an array"))),
    }
}

fn state_op(op: &Value) -> Result<(), StreamsInputError> {
    let o = op.as_object().ok_or_else(|| bad("must be an object"))?;
    let key = required(o, "key")?;
    if key.len() > MAX_STATE_KEY_BYTES {
        return Err(bad(format!("key is over {MAX_STATE_KEY_BYTES} bytes")));
    }
    match text(o, "type")? {
        Some("delete") => Ok(()),
        Some("upsert") if o.contains_key("value") => Ok(()),
        Some("upsert") => Err(bad("an upsert needs a value")),
        _ => Err(bad("type must be upsert or delete")),
    }
}

fn push_item(item: &Value) -> Result<PushItem, StreamsInputError> {
    let o = item.as_object().ok_or_else(|| bad("must be an object"))?;
    let partition = match text(o, "partition")?.filter(|p| !p.is_empty()) {
        None => PartitionName::default_partition(),
        Some(p) => PartitionName::parse(p).map_err(|e| bad(format!("partition: {e}")))?,
    };
    let payload = field(o, "payload").unwrap_or(&Value::Null);
    Ok(PushItem {
        queue: queue(required(o, "queue")?, "queue")?,
        partition,
        payload: serde_json::to_vec(payload).map_err(|e| bad(format!("payload: {e}")))?,
        transaction_id: text(o, "transactionId")?
            .filter(|t| !t.is_empty())
            .map(str::to_owned),
        trace_id: None,
        producer: None,
    })
}

fn cycle_ack(ack: &Value) -> Result<CycleAck, StreamsInputError> {
    let o = ack
        .as_object()
        .ok_or_else(|| bad("must be an object or null"))?;
    if let Some(status) = text(o, "status")? {
        if !status.eq_ignore_ascii_case("completed") && !status.eq_ignore_ascii_case("success") {
            return Err(bad("status must be completed"));
        }
    }
    let count = field(o, "count")
        .and_then(Value::as_i64)
        .and_then(|c| i32::try_from(c).ok())
        .filter(|c| *c >= 1)
        .ok_or_else(|| bad("count must be an integer of at least 1"))?;
    Ok(CycleAck {
        transaction_id: text(o, "transactionId")?
            .filter(|t| !t.is_empty())
            .map(str::to_owned),
        lease_id: required(o, "leaseId")?.to_owned(),
        count,
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn cycle(extra: Value) -> Value {
        let mut body = json!({
            "query_id": "0190b6c2-6f0a-7000-8000-000000000001",
            "partition_id": "7", "consumer_group": "streams.q",
        });
        if let (Some(b), Some(e)) = (body.as_object_mut(), extra.as_object()) {
            b.extend(e.clone());
        }
        body
    }

    #[test]
    fn a_cycle_reads_its_ack_pushes_and_ops() {
        let c = parse_cycle(&cycle(json!({
            "state_ops": [{"type": "upsert", "key": "k", "value": {"n": 1}},
                          {"type": "delete", "key": "j"}],
            "push_items": [{"queue": "sink", "partition": "p", "payload": {"x": 1}}],
            "ack": {"transactionId": "t", "leaseId": "l", "status": "completed", "count": 3},
            "release_lease": false,
        })))
        .expect("a sound cycle");
        assert_eq!(c.partition_id, 7);
        assert_eq!(c.state_op_count, 2);
        assert_eq!(c.pushes[0].payload, br#"{"x":1}"#.to_vec());
        let ack = c.ack.expect("an ack");
        assert_eq!((ack.count, ack.lease_id.as_str()), (3, "l"));
        assert!(!c.release_lease);
        assert!(parse_cycle(&cycle(json!({"ack": null})))
            .expect("an idle flush")
            .ack
            .is_none());
    }

    #[test]
    fn bad_fields_are_named() {
        let err = |extra| parse_cycle(&cycle(extra)).expect_err("refused").0;
        assert!(err(json!({"ack": {"leaseId": "l", "count": 0}})).contains("count"));
        assert!(err(json!({"ack": {"count": 1}})).contains("leaseId"));
        assert!(err(json!({"state_ops": [{"type": "put", "key": "k"}]})).contains("type"));
        assert!(err(json!({"state_ops": [{"type": "upsert", "key": "k"}]})).contains("value"));
        assert!(err(json!({"push_items": [{"payload": 1}]})).contains("queue"));
        assert!(err(json!({"partition_id": "x"})).contains("partition_id"));
        assert!(err(json!({"query_id": "q1"})).contains("query_id"));
    }
}
