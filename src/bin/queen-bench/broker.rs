//! The broker as a system under test: push (JSON, or binary `QPB1`), pop (JSON, or framed
//! `QPF1`) and batch ack over HTTP, one keep-alive connection per producer or consumer.
//!
//! The byte layouts live in `qpb1` and `qpf1`; this file only sends, receives and checks.

use std::fmt::Write as _;
use std::time::Duration;

use anyhow::{bail, Context};
use serde::{Deserialize, Serialize};

use crate::qpb1;
use crate::qpf1;
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

/// Pushes JSON bodies, or binary ones.
pub struct BrokerProducer {
    http: reqwest::Client,
    url: String,
    queue: String,
    /// The queue name as a JSON string, for JSON bodies.
    queue_json: String,
    body: String,
    /// `Some`: push `QPB1` flag-8 bodies instead of JSON.
    binary: Option<qpb1::Encoder>,
}

impl BrokerProducer {
    /// A producer for `target`; `binary` sends `QPB1` flag-8 bodies instead of JSON.
    pub fn new(target: &Target, binary: bool) -> anyhow::Result<Self> {
        Ok(Self {
            http: client()?,
            url: format!("{}/api/v1/push", target.base),
            queue: target.queue.clone(),
            queue_json: serde_json::to_string(&target.queue)?,
            body: String::new(),
            binary: binary.then(qpb1::Encoder::default),
        })
    }

    /// The JSON body of `batch`, built by hand: the payloads are already JSON, so they go in
    /// as they are.
    fn json_body(&mut self, batch: &Batch) -> anyhow::Result<Vec<u8>> {
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
                self.queue_json, batch.partition, m.seq, m.json
            )?;
        }
        body.push_str("]}");
        Ok(body.clone().into_bytes())
    }
}

#[derive(Deserialize)]
struct PushAnswer {
    status: String,
}

impl Producer for BrokerProducer {
    async fn push(&mut self, batch: &Batch) -> anyhow::Result<()> {
        let (body, content_type) = match &mut self.binary {
            Some(encoder) => (
                encoder.body(
                    &self.queue,
                    &format!("p{}", batch.partition),
                    batch.messages.iter().map(|m| m.json.as_bytes()),
                )?,
                "application/x-queen-push",
            ),
            None => (self.json_body(batch)?, "application/json"),
        };
        let response = self
            .http
            .post(&self.url)
            .header("content-type", content_type)
            .body(body)
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

/// Pops with a lease (JSON or framed answers) and acknowledges each batch with one batch ack.
pub struct BrokerConsumer {
    http: reqwest::Client,
    group_index: usize,
    group: Option<String>,
    pop_wait: String,
    pop_now: String,
    ack_url: String,
    frames: bool,
}

/// How a consumer pops.
#[derive(Debug, Clone, Copy)]
pub struct PopOptions {
    /// Messages per pop.
    pub batch: u32,
    /// Partitions one pop may claim.
    pub partitions: u32,
    /// Long-poll deadline.
    pub timeout_ms: u64,
    /// Ask for framed (`QPF1`) answers.
    pub frames: bool,
}

impl BrokerConsumer {
    /// A consumer of `target` in consumer group `group` (`None`: queue mode).
    pub fn new(
        target: &Target,
        group_index: usize,
        group: Option<String>,
        options: PopOptions,
    ) -> anyhow::Result<Self> {
        let PopOptions {
            batch,
            partitions,
            timeout_ms,
            frames,
        } = options;
        let mut pop = format!(
            "{}/api/v1/pop/queue/{}?batch={batch}&partitions={partitions}",
            target.base, target.queue
        );
        if let Some(g) = &group {
            write!(pop, "&consumerGroup={g}")?;
        }
        // The published client always appends `frames=true` last.
        let tail = if frames { "&frames=true" } else { "" };
        Ok(Self {
            http: client()?,
            group_index,
            pop_wait: format!("{pop}&wait=true&timeout={timeout_ms}{tail}"),
            pop_now: format!("{pop}{tail}"),
            group,
            ack_url: format!("{}/api/v1/ack/batch", target.base),
            frames,
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
        let popped = if self.frames {
            Popped::from_frames(&bytes)?
        } else {
            Popped::from_json(&bytes)?
        };
        if popped.messages.is_empty() {
            return Ok(Vec::new());
        }
        let body = AckBody {
            acknowledgments: popped
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
        Ok(popped
            .messages
            .iter()
            .map(|m| Delivery {
                seq: m.data.seq,
                sent_us: m.data.ts,
            })
            .collect())
    }
}

/// One pop's messages, whichever answer they came in.
struct Popped {
    messages: Vec<PoppedMessage>,
}

impl Popped {
    fn from_json(bytes: &[u8]) -> anyhow::Result<Self> {
        let answer: PopAnswer = serde_json::from_slice(bytes).context("pop answer")?;
        Ok(Self {
            messages: answer.messages,
        })
    }

    /// Decodes a framed answer; each message gets the answer's lease, as the client does.
    fn from_frames(bytes: &[u8]) -> anyhow::Result<Self> {
        let answer = qpf1::decode(bytes).context("framed pop answer")?;
        let lease_id = (!answer.lease_id.is_empty()).then_some(answer.lease_id);
        let messages = answer
            .messages
            .into_iter()
            .map(|m| {
                Ok(PoppedMessage {
                    data: serde_json::from_slice(&m.payload).context("framed payload")?,
                    transaction_id: m.transaction_id,
                    partition_id: m.partition_id,
                    lease_id: lease_id.clone(),
                })
            })
            .collect::<anyhow::Result<_>>()?;
        Ok(Self { messages })
    }
}
