//! The table printed at the end of a run: the scenario, each phase's figures for the broker
//! (and the baseline; on a Citus cluster each node's PostgreSQL CPU beside the total), the exactly-once verdicts, the ceiling and, with `--compare-wire`,
//! the JSON against binary comparison.
//!
//! Formatting only; the figures come from `result`.

use std::fmt::Write as _;

use crate::args::size_label;
use crate::result::{ratio, RunResult, SystemResult};
use crate::stats::Latency;
use crate::wire;

/// The table printed at the end of a run.
pub fn render(result: &RunResult) -> String {
    let s = &result.scenario;
    let mut out = String::new();
    let mode = if s.groups == 0 {
        "queue mode".to_owned()
    } else {
        format!("{} consumer groups", s.groups)
    };
    let _ = writeln!(
        out,
        "\n{}: {} messages, {} producers, {} consumers, push batch {}, pop batch {}, \
         {} partitions, {mode}, payload {}",
        result.name,
        result.broker.push.messages,
        s.producers,
        s.consumers,
        s.batch,
        s.pop_batch,
        s.partitions,
        size_label(s.payload)
    );
    let _ = writeln!(
        out,
        "PostgreSQL, the broker and this tool share this machine's {} cores: read the ratios.\n",
        result.cores
    );
    let b = &result.broker;
    let base = result.baseline.as_ref();
    let _ = writeln!(
        out,
        "{:<30} {:>12} {:>12} {:>8}",
        "", "broker", "baseline", "ratio"
    );
    let mut row = |name: &str, x: Option<f64>, y: Option<f64>, digits: usize| {
        let cell = |v: Option<f64>| v.map_or("-".to_owned(), |v| format!("{v:.digits$}"));
        let r = match (x, y) {
            (Some(x), Some(y)) => ratio(x, y).map_or("-".to_owned(), |r| format!("{r:.2}x")),
            _ => "-".to_owned(),
        };
        let _ = writeln!(out, "{name:<30} {:>12} {:>12} {r:>8}", cell(x), cell(y));
    };
    row(
        "push msg/s",
        Some(b.push.rate),
        base.map(|x| x.push.rate),
        0,
    );
    row(
        "pop+ack msg/s",
        Some(b.drain.rate),
        base.map(|x| x.drain.rate),
        0,
    );
    let lat = |s: Option<&SystemResult>, f: fn(&Latency) -> f64| {
        s.and_then(|s| s.live.as_ref()?.latency.as_ref().map(f))
    };
    row(
        "latency p50 ms",
        lat(Some(b), |l| l.p50_ms),
        lat(base, |l| l.p50_ms),
        1,
    );
    row(
        "latency p95 ms",
        lat(Some(b), |l| l.p95_ms),
        lat(base, |l| l.p95_ms),
        1,
    );
    row(
        "latency p99 ms",
        lat(Some(b), |l| l.p99_ms),
        lat(base, |l| l.p99_ms),
        1,
    );
    row("broker CPU s / M msgs", b.broker_cpu_per_m(), None, 1);
    row(
        "PostgreSQL CPU s / M msgs",
        b.pg_cpu_per_m(),
        base.and_then(|x| x.pg_cpu_per_m()),
        1,
    );
    for (node, cpu) in b.node_cpu_per_m() {
        row(&format!("  {node} CPU s / M msgs"), Some(cpu), None, 1);
    }
    row(
        "load tool CPU s / M msgs",
        b.tool_cpu_per_m(),
        base.and_then(|x| x.tool_cpu_per_m()),
        1,
    );
    let wal = match b.push.node_cpu_s.is_empty() {
        true => "WAL bytes / msg",
        false => "WAL bytes / msg (coordinator)",
    };
    row(wal, b.wal_per_msg(), base.and_then(|x| x.wal_per_msg()), 0);
    if let Some(live) = &b.live {
        let _ = writeln!(
            out,
            "(latency: push to delivery at {:.0} msg/s offered to both)",
            live.offered_rate
        );
    }
    if let (Some(push), Some(pop)) = (
        result.push_ratio_without_broker(),
        result.pop_ratio_without_broker(),
    ) {
        let _ = writeln!(
            out,
            "bound with a broker costing no CPU (PostgreSQL and tool CPU per message on \
             {} cores): push {push:.2}x, pop+ack {pop:.2}x the baseline",
            result.cores
        );
    }
    let verdict = |s: &SystemResult| if s.exactly_once() { "yes" } else { "NO" };
    let _ = writeln!(
        out,
        "exactly once: broker {}{}",
        verdict(b),
        base.map_or(String::new(), |x| format!(", baseline {}", verdict(x)))
    );
    for (who, s) in std::iter::once(("broker", b)).chain(base.map(|x| ("baseline", x))) {
        if !s.exactly_once() {
            let _ = writeln!(out, "  {who} drain: {:?}", s.drain_check);
            if let Some(l) = &s.live {
                let _ = writeln!(out, "  {who} live: {:?}", l.check);
            }
        }
    }
    if let (Some(c), Some((f1, f2))) = (&result.ceiling, result.ceiling_fractions()) {
        let _ = writeln!(
            out,
            "raw PostgreSQL ceiling: {:.0} msg/s (segment rows), {:.0} msg/s (+ dedup rows); \
             broker push = {:.0}% / {:.0}% of it",
            c.segments.rate,
            c.segments_dedup.rate,
            f1 * 100.0,
            f2 * 100.0
        );
    }
    if let Some(w) = &result.wire {
        out.push_str(&wire::render(b, w));
    }
    out
}
