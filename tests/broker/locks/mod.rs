//! `POST /api/v1/locks` over real HTTP and a real PostgreSQL: every op and answer field,
//! one holder per slot, semaphores and owner-idempotent resends ([`ops`]); expiry and stale
//! tokens ([`expiry`]); sixteen workers guarding a shared KV counter with one lock, checked
//! by fencing tokens and by the counter ([`concurrency`]); `contended` and a database
//! failure ([`races`]); tenants, roles and refused input ([`access`]).

mod access;
mod concurrency;
mod expiry;
mod ops;
mod races;

use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::support::TestBroker;

/// Sends `ops` as one call; asserts a 200 with one result per op and returns them.
pub async fn results(b: &TestBroker, ops: Value) -> Vec<Value> {
    let asked = ops.as_array().map_or(0, Vec::len);
    let (status, body) = b.post("/api/v1/locks", &json!({ "operations": ops })).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let results = body["results"].as_array().cloned().unwrap_or_default();
    assert_eq!(results.len(), asked, "{body}");
    results
}

/// The one result of a single op.
pub async fn one(b: &TestBroker, op: Value) -> Value {
    results(b, json!([op])).await.remove(0)
}

/// An `acquire` of `name` for `owner`, living `ttl` seconds.
pub fn acquire(name: &str, owner: &str, ttl: i64) -> Value {
    json!({"op": "acquire", "name": name, "owner": owner, "ttlSeconds": ttl})
}

/// A `get` of `name`.
pub fn get(name: &str) -> Value {
    json!({"op": "get", "name": name})
}

/// The token of an answer, asserting it is a positive integer.
pub fn token(answer: &Value) -> i64 {
    answer["token"]
        .as_i64()
        .filter(|t| *t > 0)
        .unwrap_or_else(|| panic!("a token in {answer}"))
}

/// Every permit row (live or expired) of `queen.kv`, as `(key, version, owner)` by key and
/// version (two tenants' rows of one key come in shard order on the Citus layout).
pub async fn permit_rows(b: &TestBroker) -> Vec<(String, i64, Option<String>)> {
    b.sql()
        .await
        .query(
            "SELECT key, version, value ->> 'owner' FROM queen.kv \
             WHERE namespace = 'queen-locks' ORDER BY key, version",
            &[],
        )
        .await
        .expect("read permits")
        .iter()
        .map(|r| (r.get(0), r.get(1), r.get(2)))
        .collect()
}
