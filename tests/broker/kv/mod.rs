//! `POST /api/v1/kv` over real HTTP and a real PostgreSQL: every op and verdict
//! ([`ops`]), prefix pages ([`prefix`]), `required` rollback ([`required`]), expiry and the
//! sweeper ([`expiry`]), linearizable conditional writes under real concurrency
//! ([`concurrency`]), tenants, roles and refused input ([`access`]), and a database
//! failure that answers 503 only with nothing applied ([`failures`]).

mod access;
mod concurrency;
mod expiry;
mod failures;
mod in_doubt;
mod listing;
mod ops;
mod prefix;
mod required;

use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::support::TestBroker;

/// Sends `ops` as one call; asserts a 200 and returns the body.
pub async fn call(b: &TestBroker, ops: Value) -> Value {
    let (status, body) = b.post("/api/v1/kv", &json!({ "operations": ops })).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    body
}

/// Sends `ops` as one call; asserts a 200 with one result per op and returns them.
pub async fn results(b: &TestBroker, ops: Value) -> Vec<Value> {
    let asked = ops.as_array().map_or(0, Vec::len);
    let body = call(b, ops).await;
    let results = body["results"].as_array().cloned().unwrap_or_default();
    assert_eq!(results.len(), asked, "{body}");
    results
}

/// The one result of a single op.
pub async fn one(b: &TestBroker, op: Value) -> Value {
    results(b, json!([op])).await.remove(0)
}

/// A `put` of `value` that never expires.
pub fn put(ns: &str, key: &str, value: Value) -> Value {
    json!({"op": "put", "ns": ns, "key": key, "value": value, "forever": true})
}

/// A `get`.
pub fn get(ns: &str, key: &str) -> Value {
    json!({"op": "get", "ns": ns, "key": key})
}

/// Rows of `queen.kv` (expired or not) in the broker's database.
pub async fn stored_rows(b: &TestBroker) -> i64 {
    b.sql()
        .await
        .query_one("SELECT count(*) FROM queen.kv", &[])
        .await
        .expect("count kv rows")
        .get(0)
}

/// Installs a test's fault on `queen.kv`: `function` (a trigger function in `public`),
/// then `trigger` (its `CREATE TRIGGER` on `queen.kv`), each sent alone. On the Citus
/// layout `kv` is distributed, and Citus refuses a trigger there ("triggers are not
/// supported on distributed tables") unless `citus.enable_unsafe_triggers` is on (as the
/// installer sets it for its own trigger files, src/db/schema/functions.rs); it then
/// creates the function on every node and the trigger on the shards, so the fault fires
/// on the worker that writes the row, inside the same statement as on PostgreSQL. Each
/// statement alone because Citus sends a trigger's DDL to the workers with the text of
/// the query it came in, and a worker refuses several commands in one.
pub async fn install_kv_fault(b: &TestBroker, function: &str, trigger: &str) {
    let sql = b.sql().await;
    if crate::support::citus::layout() {
        sql.batch_execute("SET citus.enable_unsafe_triggers = on")
            .await
            .expect("allow a trigger on a distributed table");
    }
    sql.batch_execute(function)
        .await
        .expect("create the fault's trigger function");
    sql.batch_execute(trigger)
        .await
        .expect("attach the fault's trigger to queen.kv");
}
