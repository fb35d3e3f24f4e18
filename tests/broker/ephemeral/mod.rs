//! `/api/v1/ephemeral/*` over real HTTP and a real PostgreSQL (which holds only the
//! declarations): the eight routes' answers ([`routes`]), bounds, policies and TTL
//! ([`bounds`]), fan-out, leases, redelivery, the retry limit and autoAck ([`delivery`]),
//! the long poll woken by a push ([`long_poll`]), refused input, tenants and roles
//! ([`access`]), many producers and consumers ([`concurrency`]) and the broker-wide cap
//! ([`memory`]).

mod access;
mod bounds;
mod concurrency;
mod delivery;
mod long_poll;
mod memory;
mod nodes;
mod routes;

use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::support::TestBroker;

/// Declares `queue` with `options`; asserts the 201.
pub async fn configure(b: &TestBroker, queue: &str, options: Value) -> Value {
    let (status, body) = b
        .post(
            "/api/v1/ephemeral/configure",
            &json!({"queue": queue, "options": options}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    body
}

/// Pushes `payloads` (each as `{payload}`) to `queue`; returns status and body.
pub async fn push(
    b: &TestBroker,
    queue: &str,
    partition: Option<&str>,
    payloads: &[Value],
) -> (StatusCode, Value) {
    let messages: Vec<Value> = payloads.iter().map(|p| json!({"payload": p})).collect();
    let mut body = json!({"queue": queue, "messages": messages});
    if let Some(p) = partition {
        body["partition"] = json!(p);
    }
    b.post("/api/v1/ephemeral/push", &body).await
}

/// Pushes and asserts every message was taken.
pub async fn push_ok(b: &TestBroker, queue: &str, payloads: &[Value]) {
    let (status, body) = push(b, queue, None, payloads).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["pushed"], payloads.len(), "{body}");
}

/// Pops with a query (after `queue=<queue>&`); asserts a 200 and returns the messages.
pub async fn pop(b: &TestBroker, queue: &str, query: &str) -> Vec<Value> {
    let (status, body) = b
        .get(&format!("/api/v1/ephemeral/pop?queue={queue}&{query}"))
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["queue"], queue, "{body}");
    body["messages"].as_array().cloned().unwrap_or_default()
}

/// Acks `messages` with `status` for `group`; returns the outcomes in order.
pub async fn ack(
    b: &TestBroker,
    queue: &str,
    group: Option<&str>,
    messages: &[Value],
    status: &str,
) -> Vec<String> {
    let acks: Vec<Value> = messages
        .iter()
        .map(|m| json!({"id": m["id"], "status": status}))
        .collect();
    let mut body = json!({"queue": queue, "acks": acks});
    if let Some(g) = group {
        body["group"] = json!(g);
    }
    let (code, answer) = b.post("/api/v1/ephemeral/ack", &body).await;
    assert_eq!(code, StatusCode::OK, "{answer}");
    answer["results"]
        .as_array()
        .expect("results")
        .iter()
        .map(|r| r["outcome"].as_str().unwrap_or_default().to_owned())
        .collect()
}

/// The payloads of popped messages.
pub fn payloads(messages: &[Value]) -> Vec<Value> {
    messages.iter().map(|m| m["payload"].clone()).collect()
}

/// The depth answer; asserts a 200.
pub async fn depth(b: &TestBroker, queue: &str) -> Value {
    let (status, body) = b
        .get(&format!("/api/v1/ephemeral/queues/{queue}/depth"))
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    body
}
