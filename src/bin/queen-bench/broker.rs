//! The broker as a system under test: JSON push, pop and batch ack over HTTP, one keep-alive
//! connection per producer or consumer.

use std::fmt::Write as _;
use std::time::Duration;

use anyhow::{bail, Context};
use serde::{Deserialize, Serialize};

use crate::system::{Consumer, Delivery, Producer};
use crate::workload::{Batch, Stamp};

/// Longest any single request may take before the run is declared broken (a long-poll
/// answers within its own timeout, well under this).
const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);

/// Where the broker is and which queue this run uses.
#[derive(Debug, Clone)]
pub struct Target {
    /// Base URL without a trailing slash.
    pub base: String,
    /// The run's queue.
    pub queue: String,
}

/// A client holding exactly one connection, so N producers really are N connections.
fn client() -> anyhow::Result<reqwest::Client> {
    reqwest::Client::builder()
        .pool_max_idle_per_host(1)
        .timeout(REQUEST_TIMEOUT)
        .tcp_nodelay(true)
        .build()
        .context("building the HTTP client")
}

/// Pushes JSON bodies.
pub struct BrokerProducer {
    http: reqwest::Client,
    url: String,
    queue: String,
    body: String,
}

impl BrokerProducer {
    /// A producer for `target`.
    pub fn new(target: &Target) -> anyhow::Result<Self> {
        Ok(Self {
            http: client()?,
            url: format!("{}/api/v1/push", target.base),
            queue: serde_json::to_string(&target.queue)?,
            body: String::new(),
        })
    }
}

#[derive(Deserialize)]
struct PushAnswer {
    status: String,
}

impl Producer for BrokerProducer {
    async fn push(&mut self, batch: &Batch) -> anyhow::Result<()> {
        // Built by hand: the payloads are already JSON, so they go in as they are.
        let body = &mut self.body;
        body.clear();
        body.push_str("{\"items\":[");
        for (i, m) in batch.messages.iter().enumerate() {
            if i > 0 {
                body.push(',');
            }
            write!(
                body,
                "{{\"queue\":{},\"partition\":\"p{}\",\"transactionId\":\"t{}\",\"payload\":{}}}",
                self.queue, batch.partition, m.seq, m.json
            )?;
        }
        body.push_str("]}");
        let response = self
            .http
            .post(&self.url)
            .header("content-type", "application/json")
            .body(body.clone())
            .send()
            .await
            .context("push request")?;
        let status = response.status();
        let bytes = response.bytes().await.context("push answer")?;
        if !status.is_success() {
            bail!(
                "push answered {status}: {}",
                String::from_utf8_lossy(&bytes)
            );
        }
        let answers: Vec<PushAnswer> = serde_json::from_slice(&bytes).context("push answer")?;
        let queued = answers.iter().filter(|a| a.status == "queued").count();
        if answers.len() != batch.messages.len() || queued != answers.len() {
            bail!(
                "push of {} new messages answered {} items, {queued} queued",
                batch.messages.len(),
                answers.len()
            );
        }
        Ok(())
    }
}

/// Pops with a lease and acknowledges each batch with one batch ack.
pub struct BrokerConsumer {
    http: reqwest::Client,
    group_index: usize,
    group: Option<String>,
    pop_wait: String,
    pop_now: String,
    ack_url: String,
}

impl BrokerConsumer {
    /// A consumer of `target` in consumer group `group` (`None`: queue mode).
    pub fn new(
        target: &Target,
        group_index: usize,
        group: Option<String>,
        batch: u32,
        partitions: u32,
        timeout_ms: u64,
    ) -> anyhow::Result<Self> {
        let mut pop = format!(
            "{}/api/v1/pop/queue/{}?batch={batch}&partitions={partitions}",
            target.base, target.queue
        );
        if let Some(g) = &group {
            write!(pop, "&consumerGroup={g}")?;
        }
        Ok(Self {
            http: client()?,
            group_index,
            pop_wait: format!("{pop}&wait=true&timeout={timeout_ms}"),
            pop_now: pop,
            group,
            ack_url: format!("{}/api/v1/ack/batch", target.base),
        })
    }
}

#[derive(Deserialize)]
struct PopAnswer {
    messages: Vec<PoppedMessage>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct PoppedMessage {
    transaction_id: String,
    partition_id: String,
    lease_id: Option<String>,
    data: Stamp,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct AckBody<'a> {
    acknowledgments: Vec<AckItem<'a>>,
    consumer_group: Option<&'a str>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct AckItem<'a> {
    transaction_id: &'a str,
    partition_id: &'a str,
    lease_id: Option<&'a str>,
    status: &'static str,
}

#[derive(Deserialize)]
struct AckVerdict {
    success: bool,
    error: Option<String>,
}

impl Consumer for BrokerConsumer {
    fn group(&self) -> usize {
        self.group_index
    }

    async fn pop_ack(&mut self, wait: bool) -> anyhow::Result<Vec<Delivery>> {
        let url = if wait { &self.pop_wait } else { &self.pop_now };
        let response = self.http.get(url).send().await.context("pop request")?;
        let status = response.status();
        if status.as_u16() == 204 {
            return Ok(Vec::new());
        }
        let bytes = response.bytes().await.context("pop answer")?;
        if !status.is_success() {
            bail!("pop answered {status}: {}", String::from_utf8_lossy(&bytes));
        }
        let answer: PopAnswer = serde_json::from_slice(&bytes).context("pop answer")?;
        let body = AckBody {
            acknowledgments: answer
                .messages
                .iter()
                .map(|m| AckItem {
                    transaction_id: &m.transaction_id,
                    partition_id: &m.partition_id,
                    lease_id: m.lease_id.as_deref(),
                    status: "completed",
                })
                .collect(),
            consumer_group: self.group.as_deref(),
        };
        let response = self
            .http
            .post(&self.ack_url)
            .header("content-type", "application/json")
            .body(serde_json::to_vec(&body)?)
            .send()
            .await
            .context("ack request")?;
        let status = response.status();
        let bytes = response.bytes().await.context("ack answer")?;
        if !status.is_success() {
            bail!("ack answered {status}: {}", String::from_utf8_lossy(&bytes));
        }
        let verdicts: Vec<AckVerdict> = serde_json::from_slice(&bytes).context("ack answer")?;
        if let Some(refused) = verdicts.iter().find(|v| !v.success) {
            bail!(
                "ack refused: {}",
                refused.error.as_deref().unwrap_or("no reason given")
            );
        }
        Ok(answer
            .messages
            .iter()
            .map(|m| Delivery {
                seq: m.data.seq,
                sent_us: m.data.ts,
            })
            .collect())
    }
}
