//! Metering a phase: CPU seconds of the broker, of each PostgreSQL server (the one server,
//! or a Citus cluster's nodes) and of this tool, and the WAL bytes written, read around the
//! phase; checkpoints on every server between phases.

use std::time::Duration;

use anyhow::Context;
use tokio_postgres::Client;

use crate::result::{NodeCpu, Phase};
use crate::{cpu, pg};

/// Reads CPU and WAL counters around a phase.
pub struct Meter {
    /// A connection to the database the broker uses (its WAL position is read there).
    pub admin: Client,
    /// The broker's process, when known.
    pub broker_pid: Option<i32>,
    /// The PostgreSQL servers: the one server, or a Citus cluster's nodes.
    pub servers: Vec<Server>,
    /// Record each server's CPU in the phases (a Citus cluster).
    pub per_node: bool,
}

/// One PostgreSQL server of the run, reached to checkpoint it and to find its postmaster.
pub struct Server {
    name: String,
    client: Client,
    postmaster: Option<i32>,
}

impl Server {
    /// Connects to the server and finds its postmaster.
    pub async fn connect(name: &str, config: &tokio_postgres::Config) -> anyhow::Result<Self> {
        let client = pg::connect(config)
            .await
            .with_context(|| format!("connecting to {name}"))?;
        let postmaster = pg::postmaster_pid(&client).await?;
        Ok(Self {
            name: name.to_owned(),
            client,
            postmaster,
        })
    }
}

pub struct Reading {
    broker: Option<f64>,
    /// Each server's CPU seconds, in `Meter::servers` order.
    servers: Vec<Option<f64>>,
    tool: f64,
    wal: Option<i64>,
}

impl Meter {
    /// The counters now.
    pub async fn read(&self) -> Reading {
        Reading {
            wal: pg::wal_position(&self.admin).await.ok(),
            broker: self.broker_pid.and_then(cpu::process_seconds),
            servers: self
                .servers
                .iter()
                .map(|s| s.postmaster.and_then(cpu::tree_seconds))
                .collect(),
            tool: cpu::self_seconds(),
        }
    }

    /// A checkpoint on every server, so no phase pays for the previous one's dirty pages.
    pub async fn checkpoint(&self) {
        for server in &self.servers {
            pg::checkpoint(&server.client).await;
        }
    }

    /// The phase's figures: `messages` in `elapsed`, costs since `before`.
    pub async fn phase(&self, before: Reading, messages: u64, elapsed: Duration) -> Phase {
        let after = self.read().await;
        let diff = |a: Option<f64>, b: Option<f64>| Some(a? - b?);
        let per_server: Vec<Option<f64>> = after
            .servers
            .iter()
            .zip(&before.servers)
            .map(|(a, b)| diff(*a, *b))
            .collect();
        let node_cpu_s = match self.per_node {
            true => self
                .servers
                .iter()
                .zip(&per_server)
                .filter_map(|(s, cpu)| {
                    Some(NodeCpu {
                        node: s.name.clone(),
                        cpu_s: (*cpu)?,
                    })
                })
                .collect(),
            false => Vec::new(),
        };
        let seconds = elapsed.as_secs_f64();
        Phase {
            messages,
            seconds,
            rate: if seconds > 0.0 {
                messages as f64 / seconds
            } else {
                0.0
            },
            broker_cpu_s: diff(after.broker, before.broker),
            pg_cpu_s: per_server.iter().copied().sum(),
            tool_cpu_s: after.tool - before.tool,
            wal_bytes: after.wal.zip(before.wal).map(|(a, b)| a - b),
            node_cpu_s,
        }
    }
}
