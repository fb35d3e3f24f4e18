//! Small helpers shared by several test files: queue setup and the group's first contact,
//! readers of popped messages and of the database, `/metrics` readers, and a pop sent from
//! a spawned task with its answer time. A helper used by one file stays in that file.

use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::{json, Value};
use tokio::task::JoinHandle;

use crate::support::{eventually, TestBroker};

/// Held by the tests whose timings matter (wake latencies) or that load the machine (the
/// 500-pop herd, the 16-consumer drains, the multi-process cluster script and the Python
/// client suites), so they do not run at the same time as each other. Other tests of the
/// binary still run alongside.
pub static TIMING: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// Configures a queue with the given options.
pub async fn configure(b: &TestBroker, queue: &str, options: Value) {
    let (status, body) = b
        .post(
            "/api/v1/configure",
            &json!({ "queue": queue, "namespace": null, "task": null, "options": options }),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
}

/// Configures a queue with the given options (no namespace or task), and checks that the
/// answer says `configured`.
pub async fn configure_confirmed(b: &TestBroker, queue: &str, options: Value) {
    let (status, body) = b
        .post(
            "/api/v1/configure",
            &json!({ "queue": queue, "namespace": null, "task": null, "options": options }),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["configured"], true, "{body}");
}

/// The group's first contact, done and settled: the SQL wildcard pop (the seed), then one
/// more pop for the reseed that follows it, so later pops are planned from the ring.
pub async fn first_contact(b: &TestBroker, queue: &str, group: &str) {
    let path = format!("/api/v1/pop/queue/{queue}?consumerGroup={group}");
    for _ in 0..2 {
        let got = b.pop_messages(&path).await;
        assert!(got.is_empty(), "first contact found messages: {got:?}");
    }
}

/// JSON numbers for a range, as payloads.
pub fn numbers(range: std::ops::Range<i64>) -> Vec<Value> {
    range.map(|n| json!(n)).collect()
}

/// One ack entry for a popped message, as the client builds it.
pub fn entry(message: &Value, status: &str, error: Option<&str>) -> Value {
    json!({
        "transactionId": message["transactionId"],
        "partitionId": message["partitionId"],
        "leaseId": message["leaseId"],
        "status": status,
        "error": error,
        "consumerGroup": null,
    })
}

/// The numeric partition id of a popped message.
pub fn partition_id(message: &Value) -> i64 {
    message["partitionId"]
        .as_str()
        .expect("partitionId is a string")
        .parse()
        .expect("partitionId is a number")
}

/// The offsets of popped messages.
pub fn offsets(messages: &[Value]) -> Vec<i64> {
    messages
        .iter()
        .map(|m| m["offset"].as_i64().unwrap())
        .collect()
}

/// A group's cursor and lease holder on a partition.
pub async fn consumer_row(b: &TestBroker, pid: i64, group: &str) -> (i64, Option<String>) {
    let row = b
        .sql()
        .await
        .query_one(
            "SELECT committed, worker_id FROM queen.log_consumers \
             WHERE partition_id = $1 AND consumer_group = $2",
            &[&pid, &group],
        )
        .await
        .unwrap();
    (row.get(0), row.get(1))
}

/// A single `count(*)`.
pub async fn sql_count(b: &TestBroker, query: &str) -> i64 {
    b.sql().await.query_one(query, &[]).await.unwrap().get(0)
}

/// `GET /metrics`.
pub async fn metrics(b: &TestBroker) -> Value {
    let (status, body) = b.get("/metrics").await;
    assert_eq!(status, StatusCode::OK, "{body}");
    body
}

/// One counter of a `/metrics` answer, by JSON pointer (`/pops/parked`).
pub fn count(m: &Value, pointer: &str) -> i64 {
    m.pointer(pointer)
        .and_then(Value::as_i64)
        .unwrap_or_else(|| panic!("no counter {pointer} in {m}"))
}

/// One counter, read now.
pub async fn counter(b: &TestBroker, pointer: &str) -> i64 {
    count(&metrics(b).await, pointer)
}

/// A group actor's `{queue, consumerGroup, ring, wheel, lent, parked, reseeding}` entry, if alive.
pub fn group_stats(m: &Value, queue: &str, group: &str) -> Option<Value> {
    m["groups"]
        .as_array()
        .unwrap_or_else(|| panic!("groups is not a list in {m}"))
        .iter()
        .find(|g| g["queue"] == queue && g["consumerGroup"] == group)
        .cloned()
}

/// Waits until at least `n` pops are parked on this broker.
pub async fn wait_parked(b: &TestBroker, n: i64) {
    let parked = eventually(Duration::from_secs(10), || async {
        let now = counter(b, "/pops/parked").await;
        (now >= n).then_some(now)
    })
    .await;
    assert!(
        parked.is_some(),
        "{n} pops never parked: {}",
        metrics(b).await
    );
}

/// What a spawned pop answered, and when.
pub struct Answer {
    pub status: StatusCode,
    pub body: Value,
    /// When the request was sent.
    pub sent: Instant,
    /// When the whole answer had arrived.
    pub at: Instant,
}

impl Answer {
    /// The delivered messages (empty on 204); panics on any other status.
    pub fn messages(&self) -> Vec<Value> {
        match self.status {
            StatusCode::NO_CONTENT => Vec::new(),
            StatusCode::OK => self.body["messages"]
                .as_array()
                .expect("messages array")
                .clone(),
            other => panic!("pop answered {other}: {}", self.body),
        }
    }
}

/// Sends a GET from its own task; resolves with the answer and the instant it arrived.
pub fn spawn_get(b: &TestBroker, path: &str) -> JoinHandle<Answer> {
    spawn_get_with(b.http.clone(), b.url(path))
}

/// Sends a GET with a given client from its own task.
pub fn spawn_get_with(http: reqwest::Client, url: String) -> JoinHandle<Answer> {
    tokio::spawn(async move {
        let sent = Instant::now();
        let response = http
            .get(&url)
            .send()
            .await
            .expect("request reaches the broker");
        let status = response.status();
        let bytes = response.bytes().await.expect("read the answer");
        let at = Instant::now();
        let body = if bytes.is_empty() {
            Value::Null
        } else {
            serde_json::from_slice(&bytes)
                .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into_owned()))
        };
        Answer {
            status,
            body,
            sent,
            at,
        }
    })
}
