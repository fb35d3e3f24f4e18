//! Durable timers over real HTTP and a real PostgreSQL: every route and status
//! ([`routes`]), refused input that changes nothing ([`bad_input`]), the fire loop (never
//! early, exactly once, the promised id, txn and partition: [`fire`]), cancel, reschedule
//! and fire excluding each other under real concurrency ([`exclusion`]), the transaction
//! rider ([`rider`]), tenants and roles ([`access`]) and a model check of 10,000 timers
//! ([`model`]). Two broker processes with one killed mid-run: `nodes::timers`.

mod access;
mod bad_input;
mod exclusion;
mod fire;
mod model;
mod rider;
mod routes;

use std::time::Duration;

use base64::Engine;
use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::support::TestBroker;

/// Base64 of `payload`'s JSON text, as the client sends it.
pub fn encode(payload: &Value) -> String {
    base64::engine::general_purpose::STANDARD.encode(payload.to_string())
}

/// A `schedule` op.
pub fn schedule(queue: &str, key: &str, payload: Value, delay_ms: i64) -> Value {
    json!({"op": "schedule", "queue": queue, "timerKey": key, "payload": encode(&payload),
           "delayMs": delay_ms, "txn": format!("txn-{key}")})
}

/// Sends `ops` as one call (again after a 429, as the client does); asserts a 200 with one
/// result per op and returns them.
pub async fn results(b: &TestBroker, ops: Value) -> Vec<Value> {
    let asked = ops.as_array().map_or(0, Vec::len);
    let call = json!({ "operations": ops });
    let (mut status, mut body) = b.post("/api/v1/timers", &call).await;
    while status == StatusCode::TOO_MANY_REQUESTS {
        tokio::time::sleep(Duration::from_millis(20)).await;
        (status, body) = b.post("/api/v1/timers", &call).await;
    }
    assert_eq!(status, StatusCode::OK, "{body}");
    let results = body["results"].as_array().cloned().unwrap_or_default();
    assert_eq!(results.len(), asked, "{body}");
    results
}

/// The one result of a single op.
pub async fn one(b: &TestBroker, op: Value) -> Value {
    results(b, json!([op])).await.remove(0)
}

/// `DELETE /api/v1/timers/{queue}/{key}` (the key's `/` kept; again after a 429, as the
/// client does); status and body.
pub async fn cancel(
    b: &TestBroker,
    queue: &str,
    key: &str,
    txn: Option<&str>,
) -> (StatusCode, Value) {
    let mut url = b.url(&format!("/api/v1/timers/{queue}/{key}"));
    if let Some(txn) = txn {
        url = format!("{url}?txn={txn}");
    }
    loop {
        let response = b
            .http
            .delete(&url)
            .send()
            .await
            .expect("request reaches the broker");
        let (status, body) = crate::support::read(response).await;
        if status != StatusCode::TOO_MANY_REQUESTS {
            return (status, body);
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Rows of `queen.timers`.
pub async fn pending(b: &TestBroker) -> i64 {
    b.sql()
        .await
        .query_one("SELECT count(*) FROM queen.timers", &[])
        .await
        .expect("count timers")
        .get(0)
}

/// Pops (and acks) every message of `queue` until none came for `quiet`.
pub async fn drain(b: &TestBroker, queue: &str, quiet: Duration) -> Vec<Value> {
    let mut got = Vec::new();
    let mut idle_since = std::time::Instant::now();
    while idle_since.elapsed() < quiet {
        let batch = b
            .pop_messages(&format!(
                "/api/v1/pop/queue/{queue}?batch=1000&wait=true&timeout=200"
            ))
            .await;
        if batch.is_empty() {
            continue;
        }
        b.ack_all(&batch, "completed", None).await;
        got.extend(batch);
        idle_since = std::time::Instant::now();
    }
    got
}
