//! The HTTP calls of the run, for both systems: the ephemeral routes
//! (`/api/v1/ephemeral/*`) and the durable push, pop and batch ack. One `reqwest` client
//! per caller, so N callers really are N keep-alive connections.

use std::time::Duration;

use anyhow::{bail, Context};
use reqwest::StatusCode;
use serde_json::{json, Value};

/// Longest any call may take before the run is declared broken.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);

/// A popped message: its id (ephemeral) or its ack handle (durable), and its payload.
#[derive(Debug, Clone)]
pub struct Popped {
    /// What the ack names.
    pub ack: Value,
    /// The payload as the broker answered it.
    pub payload: Value,
}

/// How a push ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pushed {
    /// Stored.
    Stored,
    /// 429: the queue (`reject`) or the broker (its cap) is full; nothing stored. The
    /// public peer server answers 503 `ephemeral_unavailable` at its cap instead, counted
    /// here the same way so `--url` can flood it too.
    Refused,
}

/// One caller of one server.
#[derive(Clone)]
pub struct Client {
    http: reqwest::Client,
    base: String,
}

/// A payload of about `bytes` bytes stamped with `seq`, the same for both systems.
pub fn payload(seq: u64, bytes: u64) -> Value {
    json!({"s": seq, "pad": "x".repeat(bytes as usize)})
}

/// The stamp of a payload made by [`payload`].
pub fn seq_of(payload: &Value) -> Option<u64> {
    payload.get("s").and_then(Value::as_u64)
}

impl Client {
    /// A caller of the server at `base`, on a connection of its own.
    pub fn new(base: &str) -> anyhow::Result<Self> {
        Ok(Self {
            http: reqwest::Client::builder()
                .pool_max_idle_per_host(1)
                .timeout(REQUEST_TIMEOUT)
                .tcp_nodelay(true)
                .build()
                .context("building the HTTP client")?,
            base: base.trim_end_matches('/').to_owned(),
        })
    }

    async fn send(&self, request: reqwest::RequestBuilder) -> anyhow::Result<(StatusCode, Value)> {
        let response = request.send().await?;
        let status = response.status();
        let bytes = response.bytes().await?;
        let body = if bytes.is_empty() {
            Value::Null
        } else {
            serde_json::from_slice(&bytes).unwrap_or_else(|_| {
                Value::String(String::from_utf8_lossy(&bytes[..bytes.len().min(300)]).into())
            })
        };
        Ok((status, body))
    }

    async fn post(&self, path: &str, body: &Value) -> anyhow::Result<(StatusCode, Value)> {
        let request = self
            .http
            .post(format!("{}{path}", self.base))
            .header("content-type", "application/json")
            .body(serde_json::to_vec(body)?);
        self.send(request)
            .await
            .with_context(|| format!("POST {path}"))
    }

    async fn get(&self, path_and_query: &str) -> anyhow::Result<(StatusCode, Value)> {
        let request = self.http.get(format!("{}{path_and_query}", self.base));
        self.send(request)
            .await
            .with_context(|| format!("GET {path_and_query}"))
    }

    /// The `/metrics` document.
    pub async fn metrics(&self) -> anyhow::Result<Value> {
        let (status, body) = self.get("/metrics").await?;
        if !status.is_success() {
            bail!("/metrics answered {status}: {body}");
        }
        Ok(body)
    }

    /// Declares an ephemeral queue with `options`.
    pub async fn configure(&self, queue: &str, options: Value) -> anyhow::Result<()> {
        let body = json!({"queue": queue, "options": options});
        let (status, answer) = self.post("/api/v1/ephemeral/configure", &body).await?;
        if !status.is_success() {
            bail!("configure {queue} answered {status}: {answer}");
        }
        Ok(())
    }

    /// Pushes `payloads` to an ephemeral queue (all or nothing).
    pub async fn push(&self, queue: &str, payloads: &[Value]) -> anyhow::Result<Pushed> {
        let messages: Vec<Value> = payloads.iter().map(|p| json!({"payload": p})).collect();
        let body = json!({"queue": queue, "messages": messages});
        self.push_body(serde_json::to_vec(&body)?).await
    }

    /// Pushes a push body serialized beforehand (the flood sends the same one again and
    /// again, and should spend its CPU sending, not encoding).
    pub async fn push_body(&self, body: Vec<u8>) -> anyhow::Result<Pushed> {
        let request = self
            .http
            .post(format!("{}/api/v1/ephemeral/push", self.base))
            .header("content-type", "application/json")
            .body(body);
        let (status, answer) = self
            .send(request)
            .await
            .context("POST /api/v1/ephemeral/push")?;
        match status {
            StatusCode::TOO_MANY_REQUESTS => Ok(Pushed::Refused),
            StatusCode::SERVICE_UNAVAILABLE if answer["code"] == "ephemeral_unavailable" => {
                Ok(Pushed::Refused)
            }
            s if s.is_success() => Ok(Pushed::Stored),
            s => bail!("ephemeral push answered {s}: {answer}"),
        }
    }

    /// Pops up to `batch` from an ephemeral queue; `wait_ms` parks the pop that long.
    pub async fn pop(
        &self,
        queue: &str,
        batch: u32,
        wait_ms: Option<u64>,
        auto_ack: bool,
    ) -> anyhow::Result<Vec<Popped>> {
        let mut query = format!("/api/v1/ephemeral/pop?queue={queue}&batch={batch}");
        if let Some(ms) = wait_ms {
            query.push_str(&format!("&wait=true&timeout={ms}"));
        }
        if auto_ack {
            query.push_str("&autoAck=true");
        }
        let (status, body) = self.get(&query).await?;
        if status == StatusCode::NO_CONTENT {
            return Ok(Vec::new());
        }
        if !status.is_success() {
            bail!("ephemeral pop answered {status}: {body}");
        }
        Ok(body["messages"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|m| Popped {
                ack: m["id"].clone(),
                payload: m["payload"].clone(),
            })
            .collect())
    }

    /// Acks `popped` as completed; answers how many came back `acked`.
    pub async fn ack(&self, queue: &str, popped: &[Popped]) -> anyhow::Result<usize> {
        let acks: Vec<Value> = popped.iter().map(|p| json!({"id": p.ack})).collect();
        let body = json!({"queue": queue, "acks": acks});
        let (status, answer) = self.post("/api/v1/ephemeral/ack", &body).await?;
        if !status.is_success() {
            bail!("ephemeral ack answered {status}: {answer}");
        }
        Ok(answer["results"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|r| r["outcome"] == "acked")
            .count())
    }

    /// Pushes `payloads` to a durable queue, each with a transaction id of `tag` and its
    /// stamp.
    pub async fn durable_push(
        &self,
        queue: &str,
        tag: &str,
        payloads: &[Value],
    ) -> anyhow::Result<()> {
        let items: Vec<Value> = payloads
            .iter()
            .map(|p| {
                let txn = format!("{tag}-{}", seq_of(p).unwrap_or_default());
                json!({"queue": queue, "partition": "Default", "transactionId": txn, "payload": p})
            })
            .collect();
        let (status, answer) = self.post("/api/v1/push", &json!({"items": items})).await?;
        if !status.is_success() {
            bail!("durable push answered {status}: {answer}");
        }
        let queued = answer
            .as_array()
            .into_iter()
            .flatten()
            .filter(|a| a["status"] == "queued")
            .count();
        if queued != payloads.len() {
            bail!(
                "durable push of {} answered {queued} queued: {answer}",
                payloads.len()
            );
        }
        Ok(())
    }

    /// Pops up to `batch` from a durable queue in queue mode, with a lease.
    pub async fn durable_pop(
        &self,
        queue: &str,
        batch: u32,
        wait_ms: u64,
    ) -> anyhow::Result<Vec<Popped>> {
        let query = format!("/api/v1/pop/queue/{queue}?batch={batch}&wait=true&timeout={wait_ms}");
        let (status, body) = self.get(&query).await?;
        if status == StatusCode::NO_CONTENT {
            return Ok(Vec::new());
        }
        if !status.is_success() {
            bail!("durable pop answered {status}: {body}");
        }
        Ok(body["messages"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|m| Popped {
                ack: json!({
                    "transactionId": m["transactionId"],
                    "partitionId": m["partitionId"],
                    "leaseId": m["leaseId"],
                    "status": "completed",
                }),
                payload: m["data"].clone(),
            })
            .collect())
    }

    /// Acks `popped` in one batch ack; answers how many succeeded.
    pub async fn durable_ack(&self, popped: &[Popped]) -> anyhow::Result<usize> {
        let acks: Vec<Value> = popped.iter().map(|p| p.ack.clone()).collect();
        let body = json!({"acknowledgments": acks});
        let (status, answer) = self.post("/api/v1/ack/batch", &body).await?;
        if !status.is_success() {
            bail!("durable ack answered {status}: {answer}");
        }
        Ok(answer
            .as_array()
            .into_iter()
            .flatten()
            .filter(|v| v["success"] == true)
            .count())
    }
}
