//! `/streams/v1/...` over real HTTP and a real PostgreSQL: registration ([`register`]),
//! state reads and their filters ([`state`]), the cycle's atomicity and its lease
//! primitive ([`cycle`]) and concurrent cycles ([`concurrency`]). A broker SIGKILLed during
//! cycles is `nodes::streams_kill`.

mod concurrency;
mod cycle;
mod register;
mod state;

use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::support::TestBroker;

/// Registers `name` on `source` (sink `sink`) with `hash`; returns (status, body).
pub async fn register(
    b: &TestBroker,
    name: &str,
    source: &str,
    hash: &str,
    reset: bool,
) -> (StatusCode, Value) {
    b.post(
        "/streams/v1/queries",
        &json!({"name": name, "source_queue": source, "sink_queue": "sink",
                "config_hash": hash, "reset": reset}),
    )
    .await
}

/// Registers and returns the server's query id.
pub async fn query_id(b: &TestBroker, name: &str, source: &str) -> String {
    let (status, body) = register(b, name, source, "h1", false).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    body["query_id"].as_str().expect("query_id").to_owned()
}

/// The state rows of (query, partition) under `filters`; asserts a 200.
pub async fn state(b: &TestBroker, query: &str, partition: &str, filters: Value) -> Vec<Value> {
    let mut body = json!({"query_id": query, "partition_id": partition, "keys": []});
    if let (Some(b), Some(f)) = (body.as_object_mut(), filters.as_object()) {
        b.extend(f.clone());
    }
    let (status, answer) = b.post("/streams/v1/state/get", &body).await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    assert_eq!(answer["success"], true, "{answer}");
    answer["rows"].as_array().expect("rows").clone()
}

/// The keys of `rows`.
pub fn keys(rows: &[Value]) -> Vec<String> {
    rows.iter()
        .filter_map(|r| r["key"].as_str().map(str::to_owned))
        .collect()
}

/// A cycle body: `ops`, `pushes` into `sink`, an ack of `count` messages of `batch`.
pub fn cycle_body(
    query: &str,
    batch: &[Value],
    count: usize,
    ops: Value,
    sink_payloads: &[Value],
    release: bool,
) -> Value {
    let last = &batch[count - 1];
    let pushes: Vec<Value> = sink_payloads
        .iter()
        .map(|p| json!({"queue": "sink", "partition": "Default", "payload": p}))
        .collect();
    json!({
        "query_id": query,
        "partition_id": batch[0]["partitionId"],
        "consumer_group": batch[0]["consumerGroup"],
        "state_ops": ops,
        "push_items": pushes,
        "ack": {"transactionId": last["transactionId"], "leaseId": last["leaseId"],
                "status": "completed", "count": count},
        "release_lease": release,
    })
}

/// Every payload in the sink queue, read through a group of its own (auto-ack).
pub async fn sink_payloads(b: &TestBroker, group: &str) -> Vec<Value> {
    let mut all = Vec::new();
    loop {
        let got = b
            .pop_messages(&format!(
                "/api/v1/pop/queue/sink?consumerGroup={group}&autoAck=true&batch=1000\
                 &subscriptionMode=all"
            ))
            .await;
        if got.is_empty() {
            return all;
        }
        all.extend(got.into_iter().map(|m| m["data"].clone()));
    }
}
