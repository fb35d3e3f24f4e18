//! Push + pop + ack at one batch size through one node: `--clients` callers, each on a
//! queue of its own, each cycle pushing a batch, popping it back and acking it, for the
//! ephemeral queues and then the durable ones with the same callers, payloads and batch.
//! Every message must come back exactly once.

use std::collections::HashSet;
use std::time::Instant;

use anyhow::{bail, Context};
use serde_json::Value;

use super::args::EphemeralArgs;
use super::client::{payload, seq_of, Client, Popped};
use crate::cpu;

/// Which queues a phase drives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum System {
    /// `/api/v1/ephemeral/*`.
    Ephemeral,
    /// `/api/v1/push`, `/api/v1/pop/queue/..`, `/api/v1/ack/batch`.
    Durable,
}

/// What one phase measured.
#[derive(Debug, Clone)]
pub struct Throughput {
    /// Messages pushed, popped and acked.
    pub messages: u64,
    /// Wall time of the phase.
    pub seconds: f64,
    /// Broker CPU per message, µs (when its pid is known).
    pub broker_cpu_us: Option<f64>,
}

impl Throughput {
    /// Messages a second.
    pub fn rate(&self) -> f64 {
        self.messages as f64 / self.seconds.max(1e-9)
    }
}

/// Pops until `want` messages came (a pop may answer fewer), then acks them all.
async fn pop_all(
    client: &Client,
    system: System,
    queue: &str,
    want: usize,
) -> anyhow::Result<Vec<Popped>> {
    let mut got = Vec::with_capacity(want);
    for _ in 0..100 {
        if got.len() >= want {
            break;
        }
        let batch = (want - got.len()) as u32;
        let popped = match system {
            System::Ephemeral => client.pop(queue, batch, Some(1000), false).await?,
            System::Durable => client.durable_pop(queue, batch, 1000).await?,
        };
        got.extend(popped);
    }
    let acked = match system {
        System::Ephemeral => client.ack(queue, &got).await?,
        System::Durable => client.durable_ack(&got).await?,
    };
    if acked != got.len() {
        bail!("{system:?}: {acked} of {} acks succeeded", got.len());
    }
    Ok(got)
}

async fn one_client(
    client: Client,
    system: System,
    queue: String,
    batch: u32,
    cycles: u64,
    payload_bytes: u64,
) -> anyhow::Result<u64> {
    let mut seen = HashSet::new();
    let mut seq = 0u64;
    for _ in 0..cycles {
        let payloads: Vec<Value> = (0..u64::from(batch))
            .map(|k| payload(seq + k, payload_bytes))
            .collect();
        seq += u64::from(batch);
        match system {
            System::Ephemeral => {
                client.push(&queue, &payloads).await?;
            }
            System::Durable => client.durable_push(&queue, &queue, &payloads).await?,
        }
        for m in pop_all(&client, system, &queue, batch as usize).await? {
            let s = seq_of(&m.payload).context("a popped payload has no stamp")?;
            if !seen.insert(s) {
                bail!("{system:?} {queue}: message {s} delivered twice");
            }
        }
    }
    if seen.len() as u64 != seq {
        bail!(
            "{system:?} {queue}: {} of {seq} messages came back",
            seen.len()
        );
    }
    Ok(seq)
}

/// Runs one system's phase on the queues `{prefix}-{client}`.
pub async fn run(
    base: &str,
    system: System,
    prefix: &str,
    args: &EphemeralArgs,
    broker_pid: Option<i32>,
) -> anyhow::Result<Throughput> {
    let callers: Vec<Client> = (0..args.clients)
        .map(|_| Client::new(base))
        .collect::<anyhow::Result<_>>()?;
    let cpu_before = broker_pid.and_then(cpu::process_seconds);
    let started = Instant::now();
    let mut tasks = Vec::new();
    for (i, client) in callers.into_iter().enumerate() {
        let queue = format!("{prefix}-{i}");
        tasks.push(tokio::spawn(one_client(
            client,
            system,
            queue,
            args.batch,
            args.cycles,
            args.payload_bytes,
        )));
    }
    let mut messages = 0;
    for t in tasks {
        messages += t.await.context("a client task failed")??;
    }
    let seconds = started.elapsed().as_secs_f64();
    let cpu_after = broker_pid.and_then(cpu::process_seconds);
    Ok(Throughput {
        messages,
        seconds,
        broker_cpu_us: match (cpu_before, cpu_after) {
            (Some(b), Some(a)) if messages > 0 => Some((a - b) * 1e6 / messages as f64),
            _ => None,
        },
    })
}
