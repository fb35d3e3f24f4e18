//! One node of a [`super::cluster::TestCluster`] seen from the outside: its address, HTTP
//! helpers for push, pop and ack, and readers of its `/metrics` (the `mesh` object included).
//! Starting and stopping the process is the cluster's job.

use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::support::ack_batch;
pub use crate::support::read;

/// A node's identity and a client for its HTTP port.
pub struct Node {
    /// `QUEEN_NODE_ID`.
    pub id: String,
    /// `PORT`.
    pub http_port: u16,
    /// `QUEEN_MESH_PORT`.
    pub mesh_port: u16,
    /// A client with a generous timeout (long-polls included).
    pub http: reqwest::Client,
}

/// A client for one node. Idle connections are dropped well before the broker's 5 s
/// keep-alive closes them, so a request never goes out on a connection the server is
/// closing at that moment (the request would fail with a transport error).
pub fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(Duration::from_secs(60))
        .pool_max_idle_per_host(32)
        .pool_idle_timeout(Duration::from_secs(2))
        .build()
        .expect("http client")
}

impl Node {
    /// A node on given ports.
    pub fn new(id: String, http_port: u16, mesh_port: u16) -> Self {
        Node {
            id,
            http_port,
            mesh_port,
            http: client(),
        }
    }

    /// `http://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.http_port)
    }

    /// Absolute URL of a path on this node.
    pub fn url_of(&self, path: &str) -> String {
        format!("{}{}", self.url(), path)
    }

    /// POSTs JSON; returns the status and the parsed body (Null when empty).
    pub async fn post(&self, path: &str, body: &Value) -> (StatusCode, Value) {
        let response = self
            .http
            .post(self.url_of(path))
            .json(body)
            .send()
            .await
            .unwrap_or_else(|e| panic!("POST {path} on node {}: {e}", self.id));
        read(response).await
    }

    /// GETs a path; returns the status and the parsed body (Null when empty).
    pub async fn get(&self, path: &str) -> (StatusCode, Value) {
        let response = self
            .http
            .get(self.url_of(path))
            .send()
            .await
            .unwrap_or_else(|e| panic!("GET {path} on node {}: {e}", self.id));
        read(response).await
    }

    /// Configures a queue with the given options.
    pub async fn configure(&self, queue: &str, options: Value) {
        let (status, body) = self
            .post(
                "/api/v1/configure",
                &json!({ "queue": queue, "namespace": null, "task": null, "options": options }),
            )
            .await;
        assert_eq!(
            status,
            StatusCode::OK,
            "configure on node {}: {body}",
            self.id
        );
    }

    /// Pushes items (`{queue, partition, payload}`) and asserts each was queued.
    pub async fn push_items(&self, items: &[Value]) {
        let (status, body) = self.post("/api/v1/push", &json!({ "items": items })).await;
        assert!(
            status.is_success(),
            "push on node {} answered {status}: {body}",
            self.id
        );
        let answers = body.as_array().expect("push answers an array");
        assert_eq!(answers.len(), items.len());
        for a in answers {
            assert_eq!(a["status"], "queued", "push on node {}: {a}", self.id);
        }
    }

    /// Pushes payloads to one partition and asserts each was queued.
    pub async fn push(&self, queue: &str, partition: &str, payloads: &[Value]) {
        let items: Vec<Value> = payloads
            .iter()
            .map(|p| json!({"queue": queue, "partition": partition, "payload": p}))
            .collect();
        self.push_items(&items).await;
    }

    /// Pops; returns the messages (empty on 204) and asserts the status is 200 or 204.
    pub async fn pop_messages(&self, path_and_query: &str) -> Vec<Value> {
        let (status, body) = self.get(path_and_query).await;
        messages(&self.id, status, &body)
    }

    /// Acks messages (as popped) with one status in queue mode; returns the per-item answers.
    pub async fn ack_all(&self, popped: &[Value], status: &str) -> Vec<Value> {
        ack_with(&self.http, &self.url(), popped, status).await
    }

    /// `GET /metrics`.
    pub async fn metrics(&self) -> Value {
        let (status, body) = self.get("/metrics").await;
        assert_eq!(
            status,
            StatusCode::OK,
            "metrics of node {}: {body}",
            self.id
        );
        body
    }

    /// The `mesh` object of `/metrics`; panics when the build has none.
    pub async fn mesh(&self) -> Value {
        let m = self.metrics().await;
        match m.get("mesh") {
            Some(mesh) if mesh.is_object() => mesh.clone(),
            _ => panic!(
                "node {} has no \"mesh\" object in /metrics (is the mesh in this build?): {m}",
                self.id
            ),
        }
    }

    /// One counter of the `mesh` object.
    pub async fn mesh_counter(&self, name: &str) -> i64 {
        let mesh = self.mesh().await;
        mesh[name]
            .as_i64()
            .unwrap_or_else(|| panic!("node {}: no mesh counter {name} in {mesh}", self.id))
    }

    /// One counter of `/metrics`, by JSON pointer (`/pops/parked`).
    pub async fn counter(&self, pointer: &str) -> i64 {
        let m = self.metrics().await;
        m.pointer(pointer)
            .and_then(Value::as_i64)
            .unwrap_or_else(|| panic!("node {}: no counter {pointer} in {m}", self.id))
    }
}

/// Acks popped messages with one status in queue mode through any client and node.
pub async fn ack_with(
    http: &reqwest::Client,
    base: &str,
    popped: &[Value],
    status: &str,
) -> Vec<Value> {
    ack_batch(http, base, popped, status, None).await
}

/// The messages of a pop answer (empty on 204); panics on any other status.
pub fn messages(node: &str, status: StatusCode, body: &Value) -> Vec<Value> {
    match status {
        StatusCode::NO_CONTENT => Vec::new(),
        StatusCode::OK => body["messages"].as_array().expect("messages array").clone(),
        other => panic!("pop on node {node} answered {other}: {body}"),
    }
}
