//! The side-by-side table of `--compare-wire`: the broker with JSON bodies against the broker
//! with binary push (`QPB1` flag 8) and framed pop (`QPF1`), measured in the same run.
//!
//! Formatting only; the two measurements come from `run`.

use std::fmt::Write as _;

use crate::result::{ratio, Phase, SystemResult};

/// Reads one figure of a system's run.
type Figure = fn(&SystemResult) -> Option<f64>;

/// The comparison: msg/s and broker CPU per 1000 messages, per phase, with binary / JSON.
pub fn render(json: &SystemResult, binary: &SystemResult) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "\nJSON vs binary bodies (same broker, same PostgreSQL, {} vs {} messages)",
        json.push.messages, binary.push.messages
    );
    let _ = writeln!(
        out,
        "{:<34} {:>12} {:>14} {:>8}",
        "", "JSON", "binary/frames", "ratio"
    );
    let rows: [(&str, Figure, usize); 4] = [
        ("push msg/s", |s| Some(s.push.rate), 0),
        ("pop+ack msg/s", |s| Some(s.drain.rate), 0),
        (
            "push broker CPU ms / 1000 msgs",
            |s| cpu_ms_per_k(&s.push),
            1,
        ),
        (
            "pop+ack broker CPU ms / 1000 msgs",
            |s| cpu_ms_per_k(&s.drain),
            1,
        ),
    ];
    for (name, f, digits) in rows {
        let cell = |v: Option<f64>| v.map_or("-".to_owned(), |v| format!("{v:.digits$}"));
        let r = f(json)
            .zip(f(binary))
            .and_then(|(j, b)| ratio(b, j))
            .map_or("-".to_owned(), |r| format!("{r:.2}x"));
        let _ = writeln!(
            out,
            "{name:<34} {:>12} {:>14} {r:>8}",
            cell(f(json)),
            cell(f(binary))
        );
    }
    let verdict = if binary.exactly_once() { "yes" } else { "NO" };
    let _ = writeln!(out, "exactly once (binary/frames): {verdict}");
    if !binary.exactly_once() {
        let _ = writeln!(out, "  binary drain: {:?}", binary.drain_check);
    }
    out
}

/// Broker CPU milliseconds per 1000 messages of a phase (deliveries, for a drain).
fn cpu_ms_per_k(phase: &Phase) -> Option<f64> {
    let cpu = phase.broker_cpu_s?;
    (phase.messages > 0).then(|| cpu * 1e6 / phase.messages as f64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::verify::Verifier;

    fn phase(messages: u64, seconds: f64, cpu: f64) -> Phase {
        Phase {
            messages,
            seconds,
            rate: messages as f64 / seconds,
            broker_cpu_s: Some(cpu),
            pg_cpu_s: None,
            tool_cpu_s: 0.0,
            wal_bytes: None,
            node_cpu_s: Vec::new(),
        }
    }

    fn system(push: Phase, drain: Phase) -> SystemResult {
        let mut v = Verifier::new(0, push.messages, 1);
        (0..push.messages).for_each(|s| v.record(0, s));
        SystemResult {
            push,
            drain,
            drain_check: v.report(),
            live: None,
        }
    }

    #[test]
    fn the_table_gives_rates_cpu_per_thousand_and_binary_over_json() {
        let json = system(phase(1000, 1.0, 2.0), phase(1000, 2.0, 1.0));
        let binary = system(phase(1000, 0.5, 1.0), phase(1000, 1.0, 0.5));

        let table = render(&json, &binary);

        assert!(table.contains("push msg/s"), "{table}");
        let line = |name: &str| {
            table
                .lines()
                .find(|l| l.starts_with(name))
                .unwrap()
                .split_whitespace()
                .rev()
                .take(3)
                .collect::<Vec<_>>()
        };
        assert_eq!(line("push msg/s"), vec!["2.00x", "2000", "1000"]);
        assert_eq!(line("pop+ack msg/s"), vec!["2.00x", "1000", "500"]);
        assert_eq!(
            line("push broker CPU ms / 1000 msgs"),
            vec!["0.50x", "1000.0", "2000.0"]
        );
        assert!(table.contains("exactly once (binary/frames): yes"));
    }
}
