//! The broker side: `POST /api/v1/kv` and `POST /api/v1/locks` calls and what their
//! answers say.

use anyhow::{ensure, Context};
use serde_json::{json, Value};

/// Seconds every key this tool writes lives (the baseline stores the same expiry).
pub const TTL_SECONDS: i64 = 3600;

/// A client of one server's KV and lock routes.
#[derive(Clone)]
pub struct Kv {
    http: reqwest::Client,
    kv_url: String,
    locks_url: String,
}

/// The small JSON document every put stores (the baseline stores the same).
pub fn value(client: u32, seq: u64) -> Value {
    json!({"client": client, "seq": seq, "note": "queen-bench kv"})
}

/// A put op of `key` in `ns`.
pub fn put_op(ns: &str, key: &str, value: Value) -> Value {
    json!({"op": "put", "ns": ns, "key": key, "value": value, "ttlSeconds": TTL_SECONDS})
}

/// A get op of `key` in `ns`.
pub fn get_op(ns: &str, key: &str) -> Value {
    json!({"op": "get", "ns": ns, "key": key})
}

/// An increment by one of `key` in `ns`.
pub fn incr_op(ns: &str, key: &str) -> Value {
    json!({"op": "incr", "ns": ns, "key": key, "delta": 1, "ttlSeconds": TTL_SECONDS})
}

impl Kv {
    /// A client of the server at `base`.
    pub fn new(base: &str) -> anyhow::Result<Self> {
        let base = base.trim_end_matches('/');
        Ok(Self {
            http: reqwest::Client::builder().tcp_nodelay(true).build()?,
            kv_url: format!("{base}/api/v1/kv"),
            locks_url: format!("{base}/api/v1/locks"),
        })
    }

    /// Sends `ops` and answers the `results` array, which must hold one result per op.
    pub async fn call(&self, ops: Vec<Value>) -> anyhow::Result<Vec<Value>> {
        let n = ops.len();
        let answer = post(&self.http, &self.kv_url, &json!({"operations": ops})).await?;
        results(answer, n)
    }

    /// Sends lock `ops`; `None` when the server has no lock route (404).
    pub async fn locks(&self, ops: Vec<Value>) -> anyhow::Result<Option<Vec<Value>>> {
        let n = ops.len();
        let r = self
            .http
            .post(&self.locks_url)
            .header("content-type", "application/json")
            .body(serde_json::to_vec(&json!({"operations": ops}))?)
            .send()
            .await?;
        if r.status().as_u16() == 404 {
            return Ok(None);
        }
        let answer = answer_of(r).await?;
        results(answer, n).map(Some)
    }
}

async fn post(http: &reqwest::Client, url: &str, body: &Value) -> anyhow::Result<Value> {
    let r = http
        .post(url)
        .header("content-type", "application/json")
        .body(serde_json::to_vec(body)?)
        .send()
        .await
        .with_context(|| format!("POST {url}"))?;
    answer_of(r).await
}

async fn answer_of(r: reqwest::Response) -> anyhow::Result<Value> {
    let status = r.status();
    let url = r.url().path().to_owned();
    let bytes = r.bytes().await?;
    ensure!(
        status.is_success(),
        "{url} answered {status}: {}",
        String::from_utf8_lossy(&bytes[..bytes.len().min(300)])
    );
    serde_json::from_slice(&bytes).with_context(|| {
        format!(
            "{url} answered something other than JSON: {}",
            String::from_utf8_lossy(&bytes[..bytes.len().min(300)])
        )
    })
}

fn results(answer: Value, n: usize) -> anyhow::Result<Vec<Value>> {
    let Value::Object(mut map) = answer else {
        anyhow::bail!("the answer is not an object: {answer}");
    };
    let results = match map.remove("results") {
        Some(Value::Array(r)) => r,
        _ => anyhow::bail!("the answer has no results: {}", Value::Object(map)),
    };
    ensure!(
        results.len() == n,
        "{} results for {n} ops: {results:?}",
        results.len()
    );
    Ok(results)
}

/// Whether a result says `field: true`.
pub fn is_true(result: &Value, field: &str) -> bool {
    result.get(field).and_then(Value::as_bool) == Some(true)
}
