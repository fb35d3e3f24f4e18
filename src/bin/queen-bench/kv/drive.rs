//! The load loop every phase shares: `clients` tasks, each calling its own op in a loop
//! until the phase's limit, every call timed, the CPU of the broker and of PostgreSQL read
//! around the whole phase.

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::figures::Phase;
use crate::cpu;
use crate::stats::Latency;

/// How a throughput phase ends.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Limit {
    /// When this much time has passed (calls already sent finish).
    Time(Duration),
    /// After this many ops of each client.
    OpsPerClient(u64),
}

/// What one call did: ops it carried and how many of them succeeded (put applied, get
/// found, lock acquired...).
#[derive(Debug, Clone, Copy, Default)]
pub struct Tally {
    /// Ops in the call.
    pub ops: u64,
    /// Ops that answered the verdict the phase counts.
    pub hits: u64,
}

/// The processes whose CPU a phase reads: the broker, the PostgreSQL server tree, and
/// this tool (its clients share the machine's cores with what they measure).
#[derive(Debug, Clone, Copy)]
pub struct Meter {
    /// The broker, when it runs on this machine and its pid is known.
    pub broker: Option<i32>,
    /// The postmaster, when PostgreSQL runs on this machine.
    pub postmaster: Option<i32>,
}

impl Meter {
    /// The same processes without the broker: for phases that do not use it.
    pub fn without_broker(self) -> Self {
        Self {
            broker: None,
            ..self
        }
    }

    fn read(&self) -> [Option<f64>; 3] {
        [
            self.broker.and_then(cpu::process_seconds),
            self.postmaster.and_then(cpu::tree_seconds),
            Some(cpu::self_seconds()),
        ]
    }
}

/// Runs `call(client, seq)` from `clients` tasks until `limit` (seq counts each client's
/// calls from 0). A client stops at its first error, which the phase keeps.
pub async fn drive<F, Fut>(name: &str, clients: u32, limit: Limit, meter: Meter, call: F) -> Phase
where
    F: Fn(u32, u64) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = anyhow::Result<Tally>> + Send + 'static,
{
    let call = Arc::new(call);
    let before = meter.read();
    let started = Instant::now();
    let mut tasks = Vec::new();
    for client in 0..clients {
        let call = call.clone();
        tasks.push(tokio::spawn(async move {
            let mut out = ClientRun::default();
            let mut seq = 0u64;
            loop {
                let more = match limit {
                    Limit::Time(d) => started.elapsed() < d,
                    Limit::OpsPerClient(n) => out.ops < n,
                };
                if !more {
                    break;
                }
                let sent = Instant::now();
                match call(client, seq).await {
                    Ok(t) => {
                        out.micros.push(sent.elapsed().as_micros() as u64);
                        out.calls += 1;
                        out.ops += t.ops;
                        out.hits += t.hits;
                    }
                    Err(e) => {
                        out.error = Some(format!("{e:#}"));
                        break;
                    }
                }
                seq += 1;
            }
            out
        }));
    }
    let mut all = ClientRun::default();
    let mut errors = 0;
    for t in tasks {
        let run = t.await.unwrap_or_else(|e| ClientRun {
            error: Some(format!("client task failed: {e}")),
            ..ClientRun::default()
        });
        all.calls += run.calls;
        all.ops += run.ops;
        all.hits += run.hits;
        all.micros.extend(run.micros);
        if let Some(e) = run.error {
            errors += 1;
            all.error.get_or_insert(e);
        }
    }
    let seconds = started.elapsed().as_secs_f64();
    let after = meter.read();
    let delta = |a: Option<f64>, b: Option<f64>| Some(b? - a?);
    Phase {
        name: name.to_owned(),
        clients,
        calls: all.calls,
        ops: all.ops,
        hits: all.hits,
        seconds,
        failed_clients: errors,
        first_error: all.error,
        latency: Latency::from_micros(&mut all.micros),
        broker_cpu_s: delta(before[0], after[0]),
        pg_cpu_s: delta(before[1], after[1]),
        tool_cpu_s: delta(before[2], after[2]),
    }
}

#[derive(Default)]
struct ClientRun {
    calls: u64,
    ops: u64,
    hits: u64,
    micros: Vec<u64>,
    error: Option<String>,
}
