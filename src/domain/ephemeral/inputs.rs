//! The checked inputs of the ephemeral routes: push's messages, pop's query, ack's
//! entries. Every check happens here, before the engine sees anything, so a 400 changes
//! nothing. They are plain data (serde), so a call can also travel to the queue's owner
//! node over the mesh (`src/mesh/message.rs`).

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::Value;

use crate::domain::{ConsumerGroup, PartitionName, QueueName};

/// The most messages one push, or acks one ack call, may carry.
pub const MAX_BATCH_ITEMS: usize = 10_000;
/// The largest `batch` a pop may ask for.
pub const MAX_POP_BATCH: u32 = 10_000;
/// The longest long-poll `timeout`, in milliseconds.
pub const MAX_WAIT_MS: u64 = 300_000;

/// Refused input: a 400 with `reason` (an identifier) and `detail` (prose).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{detail}")]
pub struct EphemeralInputError {
    /// What was wrong, as an identifier.
    pub reason: &'static str,
    /// What was wrong, for a person.
    pub detail: String,
}

impl EphemeralInputError {
    /// A refusal.
    pub fn new(reason: &'static str, detail: impl Into<String>) -> Self {
        EphemeralInputError {
            reason,
            detail: detail.into(),
        }
    }
}

/// A queue name from a body or a path.
pub fn queue_name(value: Option<&str>) -> Result<QueueName, EphemeralInputError> {
    let value = value.ok_or_else(|| EphemeralInputError::new("queue", "queue is required"))?;
    QueueName::parse(value).map_err(|e| EphemeralInputError::new("queue", e.to_string()))
}

/// A partition name, when one was given.
pub fn partition_name(value: Option<&str>) -> Result<Option<PartitionName>, EphemeralInputError> {
    value
        .map(|p| {
            PartitionName::parse(p)
                .map_err(|e| EphemeralInputError::new("partition", e.to_string()))
        })
        .transpose()
}

/// A consumer group (queue mode when none).
pub fn group_name(value: Option<&str>) -> Result<ConsumerGroup, EphemeralInputError> {
    ConsumerGroup::parse(value).map_err(|e| EphemeralInputError::new("group", e.to_string()))
}

/// A push body's `messages`: each `{payload: x}` (or `{data: x}`) gives `x` as JSON text.
pub fn push_payloads(messages: Option<&RawValue>) -> Result<Vec<Arc<str>>, EphemeralInputError> {
    /// One message of a push, borrowed from the body: the payload is copied once, into
    /// the shared text the ring keeps, and nothing else of the message is allocated.
    #[derive(Deserialize)]
    struct Item<'a> {
        #[serde(default, borrow)]
        payload: Present<'a>,
        #[serde(default, borrow)]
        data: Present<'a>,
    }
    let messages =
        messages.ok_or_else(|| EphemeralInputError::new("messages", "messages is required"))?;
    let items: Vec<Item<'_>> = serde_json::from_str(messages.get()).map_err(|_| {
        EphemeralInputError::new("messages", "messages must be a list of {\"payload\": x}")
    })?;
    if items.is_empty() || items.len() > MAX_BATCH_ITEMS {
        return Err(EphemeralInputError::new(
            "messages",
            format!("a push carries 1 to {MAX_BATCH_ITEMS} messages"),
        ));
    }
    items
        .into_iter()
        .enumerate()
        .map(|(i, item)| {
            item.payload
                .0
                .or(item.data.0)
                .map(|raw| Arc::from(raw.get()))
                .ok_or_else(|| {
                    EphemeralInputError::new(
                        "messages",
                        format!("message {i} has no payload: write {{\"payload\": x}}"),
                    )
                })
        })
        .collect()
}

/// A field that is there (`null` included: a payload may be JSON null) or not.
#[derive(Default)]
struct Present<'a>(Option<&'a RawValue>);

impl<'de: 'a, 'a> Deserialize<'de> for Present<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(field: D) -> Result<Self, D::Error> {
        <&'de RawValue>::deserialize(field).map(|raw| Present(Some(raw)))
    }
}

/// A pop's query, checked (names as text, so the call can travel over the mesh).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PopRequest {
    /// The queue.
    pub queue: String,
    /// One partition, or every partition of the queue.
    pub partition: Option<String>,
    /// The most messages to answer.
    pub batch: u32,
    /// How long to wait for a message, in milliseconds; 0 answers at once.
    pub wait_ms: u64,
    /// The consumer group (`__QUEUE_MODE__` when none was given).
    pub group: String,
    /// Commit at delivery: no lease, nothing to ack.
    pub auto_ack: bool,
}

#[derive(Deserialize)]
struct PopQuery {
    queue: Option<String>,
    partition: Option<String>,
    batch: Option<String>,
    wait: Option<String>,
    timeout: Option<String>,
    group: Option<String>,
    #[serde(rename = "autoAck")]
    auto_ack: Option<String>,
}

impl PopRequest {
    /// Checks a pop's query string.
    pub fn parse(query: &str) -> Result<Self, EphemeralInputError> {
        let q: PopQuery = serde_urlencoded::from_str(query)
            .map_err(|e| EphemeralInputError::new("query", format!("unreadable query: {e}")))?;
        let batch = match q.batch.as_deref() {
            None => 1,
            Some(text) => match text.parse::<u32>() {
                Ok(n) if (1..=MAX_POP_BATCH).contains(&n) => n,
                _ => {
                    return Err(EphemeralInputError::new(
                        "batch",
                        format!("batch must be a whole number from 1 to {MAX_POP_BATCH}"),
                    ))
                }
            },
        };
        let wait = flag("wait", q.wait.as_deref())?;
        let timeout = match q.timeout.as_deref() {
            None => 30_000,
            Some(text) => match text.parse::<u64>() {
                Ok(n) if n <= MAX_WAIT_MS => n,
                _ => {
                    return Err(EphemeralInputError::new(
                        "timeout",
                        format!("timeout must be milliseconds from 0 to {MAX_WAIT_MS}"),
                    ))
                }
            },
        };
        Ok(PopRequest {
            queue: queue_name(q.queue.as_deref())?.as_str().to_owned(),
            partition: partition_name(q.partition.as_deref())?.map(|p| p.as_str().to_owned()),
            batch,
            wait_ms: if wait { timeout } else { 0 },
            group: group_name(q.group.as_deref())?.as_str().to_owned(),
            auto_ack: flag("autoAck", q.auto_ack.as_deref())?,
        })
    }
}

fn flag(name: &'static str, value: Option<&str>) -> Result<bool, EphemeralInputError> {
    match value {
        None | Some("false") | Some("0") => Ok(false),
        Some("true") | Some("1") => Ok(true),
        Some(other) => Err(EphemeralInputError::new(
            name,
            format!("{name} must be true or false, not {other:?}"),
        )),
    }
}

/// What an ack says of a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum AckStatus {
    /// Done: the message leaves the group.
    Completed,
    /// Failed: redeliver with `attempts + 1`, up to the retry limit.
    Failed,
    /// As failed.
    Retry,
}

/// One entry of an ack call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AckEntry {
    /// The message id as sent (answered back as sent, even when it does not parse).
    pub id: String,
    /// What happened to it.
    pub status: AckStatus,
}

/// An ack body's `acks`, checked.
pub fn ack_entries(acks: Option<&Value>) -> Result<Vec<AckEntry>, EphemeralInputError> {
    let Some(Value::Array(items)) = acks else {
        return Err(EphemeralInputError::new(
            "acks",
            "acks must be a list of {\"id\": ..., \"status\"?: completed | failed | retry}",
        ));
    };
    if items.len() > MAX_BATCH_ITEMS {
        return Err(EphemeralInputError::new(
            "acks",
            format!("an ack call carries at most {MAX_BATCH_ITEMS} acks"),
        ));
    }
    items
        .iter()
        .enumerate()
        .map(|(i, item)| {
            let id = item
                .get("id")
                .and_then(Value::as_str)
                .filter(|id| !id.is_empty());
            let Some(id) = id else {
                return Err(EphemeralInputError::new(
                    "acks",
                    format!("ack {i} has no id"),
                ));
            };
            let status = match item.get("status") {
                None | Some(Value::Null) | Some(Value::Bool(true)) => AckStatus::Completed,
                Some(Value::Bool(false)) => AckStatus::Failed,
                Some(Value::String(s)) if s == "completed" => AckStatus::Completed,
                Some(Value::String(s)) if s == "failed" => AckStatus::Failed,
                Some(Value::String(s)) if s == "retry" => AckStatus::Retry,
                Some(other) => {
                    return Err(EphemeralInputError::new(
                        "status",
                        format!("ack {i}: status must be completed, failed or retry, not {other}"),
                    ))
                }
            };
            Ok(AckEntry {
                id: id.to_owned(),
                status,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_pop_query_is_checked() {
        let pop = PopRequest::parse("queue=q&batch=5&wait=true&timeout=100&group=g&autoAck=true")
            .unwrap();
        assert_eq!(pop.batch, 5);
        assert_eq!(pop.wait_ms, 100);
        assert!(pop.auto_ack);
        assert_eq!(PopRequest::parse("queue=q&timeout=100").unwrap().wait_ms, 0);
        for bad in [
            "",
            "queue=q&batch=0",
            "queue=q&wait=maybe",
            "queue=q&timeout=-1",
        ] {
            assert!(PopRequest::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn push_payloads_keep_their_json_text() {
        let raw =
            RawValue::from_string(r#"[{"payload": {"a": 1}}, {"data": null}]"#.into()).unwrap();
        let texts: Vec<String> = push_payloads(Some(&raw))
            .unwrap()
            .iter()
            .map(|p| p.to_string())
            .collect();
        assert_eq!(texts, [r#"{"a": 1}"#, "null"]);
        for bad in ["[]", "[1]", r#"[{"x": 1}]"#, "{}"] {
            let raw = RawValue::from_string(bad.into()).unwrap();
            assert!(push_payloads(Some(&raw)).is_err(), "{bad}");
        }
    }

    #[test]
    fn ack_entries_are_checked() {
        let acks =
            ack_entries(Some(&json!([{"id": "a"}, {"id": "b", "status": "retry"}]))).unwrap();
        assert_eq!(acks[1].status, AckStatus::Retry);
        for bad in [
            json!({}),
            json!([{"status": "completed"}]),
            json!([{"id": "a", "status": "x"}]),
        ] {
            assert!(ack_entries(Some(&bad)).is_err(), "{bad}");
        }
    }
}
