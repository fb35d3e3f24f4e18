//! A run's figures: the JSON result file (the table printed at the end of a run is `table`).
//!
//! Ratios are always computed from figures measured in the same run (these machines are
//! shared and noisy; absolute numbers alone mean little).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::stats::Latency;
use crate::verify::VerifyReport;

/// Everything one `queen-bench run` measured.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunResult {
    /// Scenario name (`--label`, or derived from the options).
    pub name: String,
    /// The command line that produced this result.
    pub command: String,
    /// When the run started (RFC 3339, UTC).
    pub started_at: String,
    /// Cores of the machine (shared by PostgreSQL, the broker and this tool).
    pub cores: usize,
    /// The scenario's options.
    pub scenario: Scenario,
    /// PostgreSQL's version and the settings that decide what a write costs.
    pub postgres: BTreeMap<String, String>,
    /// Extra environment the broker was started with.
    pub broker_env: Vec<(String, String)>,
    /// The broker's figures.
    pub broker: SystemResult,
    /// Bytes of the segment blobs the broker stored in its push phase (compressed).
    #[serde(default)]
    pub stored_blob_bytes: Option<i64>,
    /// With `--compare-wire`: the broker again, binary push and framed pop, same run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wire: Option<SystemResult>,
    /// The row-per-message baseline's figures.
    pub baseline: Option<SystemResult>,
    /// The raw PostgreSQL ceiling of the push path.
    pub ceiling: Option<Ceiling>,
}

/// The options that define a scenario.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Scenario {
    /// Producer connections.
    pub producers: u32,
    /// Consumer connections.
    pub consumers: usize,
    /// Messages per push.
    pub batch: u32,
    /// Messages per pop.
    pub pop_batch: u32,
    /// Partitions per pop.
    pub pop_partitions: u32,
    /// Partitions of the queue.
    pub partitions: u32,
    /// Consumer groups (0: queue mode).
    pub groups: u32,
    /// Bytes per message document.
    pub payload: usize,
    /// Offered load of the latency phase, as a fraction of the slower system's capacity.
    pub live_load: f64,
}

/// One system's phases.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SystemResult {
    /// Producers only.
    pub push: Phase,
    /// Consumers only, from the backlog the push left.
    pub drain: Phase,
    /// Exactly-once verdict of the drain.
    pub drain_check: VerifyReport,
    /// Producers paced, consumers live: end-to-end latency.
    pub live: Option<Live>,
}

/// One timed phase and what it cost.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Phase {
    /// Messages pushed, or distinct deliveries (a message counts once per group).
    pub messages: u64,
    /// Seconds the phase took.
    pub seconds: f64,
    /// messages / seconds.
    pub rate: f64,
    /// Broker CPU seconds in the phase (none for SQL-only systems or an unknown pid).
    pub broker_cpu_s: Option<f64>,
    /// PostgreSQL CPU seconds (postmaster and children), when on this machine.
    pub pg_cpu_s: Option<f64>,
    /// This tool's CPU seconds.
    pub tool_cpu_s: f64,
    /// WAL bytes written.
    pub wal_bytes: Option<i64>,
    /// On a Citus cluster (`--citus`): each node's share of `pg_cpu_s`, coordinator first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub node_cpu_s: Vec<NodeCpu>,
}

/// One PostgreSQL node's CPU seconds in a phase (a Citus coordinator or worker).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct NodeCpu {
    /// `coordinator`, `worker1`, ...
    pub node: String,
    /// CPU seconds of the node's server tree.
    pub cpu_s: f64,
}

/// The latency phase.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Live {
    /// Messages per second offered (the same for broker and baseline).
    pub offered_rate: f64,
    /// Messages pushed.
    pub messages: u64,
    /// Push to delivery, per delivered message.
    pub latency: Option<Latency>,
    /// Exactly-once verdict of the phase.
    pub check: VerifyReport,
}

/// The raw insert ceiling.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Ceiling {
    /// Segment rows only.
    pub segments: Phase,
    /// Segment rows plus one dedup row per message, as the broker stores.
    pub segments_dedup: Phase,
}

impl Phase {
    /// Messages per second `cores` could carry in this phase if the broker itself cost no
    /// CPU: every core busy, each message costing only the PostgreSQL and load-tool CPU this
    /// phase measured for it. An upper bound on what any broker in front of the same SQL
    /// could reach on this machine, since PostgreSQL and this tool share its cores.
    pub fn rate_without_broker(&self, cores: usize) -> Option<f64> {
        let per_message = (self.pg_cpu_s? + self.tool_cpu_s) / self.messages as f64;
        (self.messages > 0 && per_message > 0.0).then(|| cores as f64 / per_message)
    }

    /// The broker's CPU a message in this phase, in microseconds.
    pub fn broker_us_per_message(&self) -> Option<f64> {
        let cpu = self.broker_cpu_s?;
        (self.messages > 0).then(|| cpu * 1e6 / self.messages as f64)
    }

    /// The broker CPU a message, in microseconds, that would let `cores` carry `rate`
    /// messages a second beside the PostgreSQL and load-tool CPU this phase measured for
    /// each message, every core busy: what a throughput target leaves the broker. Zero or
    /// less means no broker could reach `rate` here, PostgreSQL and the tool alone filling
    /// the cores.
    pub fn broker_us_allowed(&self, cores: usize, rate: f64) -> Option<f64> {
        let others = self.pg_cpu_s? + self.tool_cpu_s;
        (self.messages > 0 && rate > 0.0)
            .then(|| (cores as f64 / rate - others / self.messages as f64) * 1e6)
    }
}

impl SystemResult {
    /// CPU seconds per million messages pushed, over push and drain together.
    fn per_million(&self, f: impl Fn(&Phase) -> Option<f64>) -> Option<f64> {
        let total = f(&self.push)? + f(&self.drain)?;
        (self.push.messages > 0).then(|| total / (self.push.messages as f64 / 1e6))
    }

    /// Broker CPU s per million messages (push + pop + ack).
    pub fn broker_cpu_per_m(&self) -> Option<f64> {
        self.per_million(|p| p.broker_cpu_s)
    }

    /// PostgreSQL CPU s per million messages (push + pop + ack).
    pub fn pg_cpu_per_m(&self) -> Option<f64> {
        self.per_million(|p| p.pg_cpu_s)
    }

    /// On a Citus cluster: (node, its CPU s per million messages, push + pop + ack), in
    /// the order the phases list the nodes.
    pub fn node_cpu_per_m(&self) -> Vec<(String, f64)> {
        self.push
            .node_cpu_s
            .iter()
            .filter_map(|n| {
                let of = |p: &Phase| {
                    p.node_cpu_s
                        .iter()
                        .find(|m| m.node == n.node)
                        .map(|m| m.cpu_s)
                };
                let cpu = self.per_million(of)?;
                Some((n.node.clone(), cpu))
            })
            .collect()
    }

    /// This tool's CPU s per million messages.
    pub fn tool_cpu_per_m(&self) -> Option<f64> {
        self.per_million(|p| Some(p.tool_cpu_s))
    }

    /// WAL bytes per message, push and drain together.
    pub fn wal_per_msg(&self) -> Option<f64> {
        let total = self.push.wal_bytes? + self.drain.wal_bytes?;
        (self.push.messages > 0).then(|| total as f64 / self.push.messages as f64)
    }

    /// True when the drain and the latency phase were both exactly once.
    pub fn exactly_once(&self) -> bool {
        self.drain_check.exactly_once()
            && self.live.as_ref().map_or(true, |l| l.check.exactly_once())
    }
}

impl RunResult {
    /// broker push / baseline enqueue.
    pub fn push_ratio(&self) -> Option<f64> {
        ratio(self.broker.push.rate, self.baseline.as_ref()?.push.rate)
    }

    /// broker pop+ack / baseline dequeue+delete.
    pub fn pop_ratio(&self) -> Option<f64> {
        ratio(self.broker.drain.rate, self.baseline.as_ref()?.drain.rate)
    }

    /// The push ratio a broker costing no CPU could reach in this run (see
    /// [`Phase::rate_without_broker`]): what bounds [`Self::push_ratio`] on these cores.
    pub fn push_ratio_without_broker(&self) -> Option<f64> {
        let rate = self.broker.push.rate_without_broker(self.cores)?;
        ratio(rate, self.baseline.as_ref()?.push.rate)
    }

    /// For a push target of `goal` × the baseline's enqueue: the broker CPU a message the
    /// target leaves it ([`Phase::broker_us_allowed`]) and the broker CPU a message it
    /// spent, in microseconds.
    pub fn push_broker_budget(&self, goal: f64) -> Option<(f64, f64)> {
        let baseline = self.baseline.as_ref()?.push.rate;
        self.broker_budget(&self.broker.push, goal * baseline)
    }

    /// The same for a pop+ack target of `goal` × the baseline's dequeue+delete.
    pub fn pop_broker_budget(&self, goal: f64) -> Option<(f64, f64)> {
        let baseline = self.baseline.as_ref()?.drain.rate;
        self.broker_budget(&self.broker.drain, goal * baseline)
    }

    /// What reaching `rate` in the broker's phase `p` leaves the broker, and what it spent.
    fn broker_budget(&self, p: &Phase, rate: f64) -> Option<(f64, f64)> {
        Some((
            p.broker_us_allowed(self.cores, rate)?,
            p.broker_us_per_message()?,
        ))
    }

    /// The pop+ack ratio a broker costing no CPU could reach in this run.
    pub fn pop_ratio_without_broker(&self) -> Option<f64> {
        let rate = self.broker.drain.rate_without_broker(self.cores)?;
        ratio(rate, self.baseline.as_ref()?.drain.rate)
    }

    /// PostgreSQL CPU per message, broker / baseline.
    pub fn pg_cpu_ratio(&self) -> Option<f64> {
        ratio(
            self.broker.pg_cpu_per_m()?,
            self.baseline.as_ref()?.pg_cpu_per_m()?,
        )
    }

    /// The broker's WAL bytes per message / its stored (compressed) blob bytes per message.
    pub fn wal_per_stored_byte(&self) -> Option<f64> {
        let stored = self.stored_blob_bytes? as f64 / self.broker.push.messages.max(1) as f64;
        ratio(self.broker.wal_per_msg()?, stored)
    }

    /// broker push / raw segment inserts, and / segments plus dedup rows.
    pub fn ceiling_fractions(&self) -> Option<(f64, f64)> {
        let c = self.ceiling.as_ref()?;
        Some((
            ratio(self.broker.push.rate, c.segments.rate)?,
            ratio(self.broker.push.rate, c.segments_dedup.rate)?,
        ))
    }
}

/// x / y, when y is a real rate.
pub fn ratio(x: f64, y: f64) -> Option<f64> {
    (y > 0.0 && x.is_finite() && y.is_finite()).then(|| x / y)
}

#[cfg(test)]
mod tests {
    use super::Phase;

    fn phase(messages: u64, pg_cpu_s: Option<f64>, tool_cpu_s: f64) -> Phase {
        Phase {
            messages,
            seconds: 1.0,
            rate: messages as f64,
            broker_cpu_s: Some(5.0),
            pg_cpu_s,
            tool_cpu_s,
            wal_bytes: None,
            node_cpu_s: Vec::new(),
        }
    }

    #[test]
    fn the_rate_without_a_broker_spends_every_core_on_postgres_and_the_tool_alone() {
        // 2 s of PostgreSQL and tool CPU for 100,000 messages: 20 µs each, two cores.
        let p = phase(100_000, Some(1.5), 0.5);
        let rate = p.rate_without_broker(2).expect("a rate");
        assert!((rate - 100_000.0).abs() < 1e-6, "{rate}");
        // The broker's own 5 s do not enter it; one core carries half as much.
        let one = p.rate_without_broker(1).expect("a rate");
        assert!((one - 50_000.0).abs() < 1e-6, "{one}");
    }

    #[test]
    fn a_target_leaves_the_broker_what_postgres_and_the_tool_leave_of_the_cores() {
        // 20 µs of PostgreSQL and tool CPU a message; the broker spent 50 µs (5 s / 100,000).
        let p = phase(100_000, Some(1.5), 0.5);
        assert_eq!(p.broker_us_per_message(), Some(50.0));
        // Two cores at 40,000 msg/s give each message 50 µs of CPU: 30 µs are left.
        let left = p.broker_us_allowed(2, 40_000.0).expect("a budget");
        assert!((left - 30.0).abs() < 1e-9, "{left}");
        // At 100,000 msg/s PostgreSQL and the tool fill both cores: nothing is left.
        let none = p.broker_us_allowed(2, 100_000.0).expect("a budget");
        assert!(none.abs() < 1e-9, "{none}");
        let below = p.broker_us_allowed(2, 200_000.0).expect("a budget");
        assert!((below + 10.0).abs() < 1e-9, "{below}");
        assert_eq!(phase(100_000, None, 0.5).broker_us_allowed(2, 1.0), None);
        assert_eq!(phase(0, Some(1.0), 0.5).broker_us_per_message(), None);
    }

    #[test]
    fn no_rate_without_a_broker_when_postgres_cpu_or_messages_are_unknown() {
        assert_eq!(phase(100_000, None, 0.5).rate_without_broker(2), None);
        assert_eq!(phase(0, Some(1.0), 0.5).rate_without_broker(2), None);
        assert_eq!(phase(10, Some(0.0), 0.0).rate_without_broker(2), None);
    }
}

#[cfg(test)]
mod node_tests {
    use super::{NodeCpu, Phase, SystemResult};
    use crate::verify::Verifier;

    fn phase(messages: u64, nodes: &[(&str, f64)]) -> Phase {
        Phase {
            messages,
            seconds: 1.0,
            rate: messages as f64,
            broker_cpu_s: None,
            pg_cpu_s: Some(nodes.iter().map(|(_, s)| s).sum()),
            tool_cpu_s: 0.0,
            wal_bytes: None,
            node_cpu_s: nodes
                .iter()
                .map(|(node, cpu_s)| NodeCpu {
                    node: (*node).to_owned(),
                    cpu_s: *cpu_s,
                })
                .collect(),
        }
    }

    /// Each node's cost per million messages adds its push and its drain CPU, as the
    /// PostgreSQL total does, in the order the phase lists the nodes.
    #[test]
    fn each_node_costs_its_push_and_drain_cpu_per_million_messages() {
        let push = phase(500_000, &[("coordinator", 2.0), ("worker1", 3.0)]);
        let drain = phase(500_000, &[("coordinator", 1.0), ("worker1", 4.0)]);
        let v = Verifier::new(0, push.messages, 1);
        let system = SystemResult {
            push,
            drain,
            drain_check: v.report(),
            live: None,
        };
        assert_eq!(
            system.node_cpu_per_m(),
            vec![
                ("coordinator".to_owned(), 6.0),
                ("worker1".to_owned(), 14.0)
            ]
        );
        assert_eq!(system.pg_cpu_per_m(), Some(20.0));
    }
}
