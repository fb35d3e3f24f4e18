//! The figures of a `queen-bench kv` run, their arithmetic, and the table printed at its
//! end. Pure: nothing here measures.

use std::fmt::Write;

use serde::Serialize;

use crate::stats::Latency;

/// The broker/baseline throughput ratio the issue asks of single-op put and get.
pub const RATIO_TARGET: f64 = 0.8;
/// The p99 of a single op on an idle machine the issue asks for, ms.
pub const P99_TARGET_MS: f64 = 5.0;

/// One phase: calls from some clients over a stretch of time.
#[derive(Debug, Clone, Serialize)]
pub struct Phase {
    /// What ran (`broker put`, `baseline get`, ...).
    pub name: String,
    /// Concurrent clients.
    pub clients: u32,
    /// Calls answered (HTTP calls or statements).
    pub calls: u64,
    /// Ops those calls carried.
    pub ops: u64,
    /// Ops with the verdict the phase counts (put applied, get found, lock cycle done).
    pub hits: u64,
    /// Wall time of the phase.
    pub seconds: f64,
    /// Clients stopped by an error.
    pub failed_clients: u32,
    /// The first of those errors.
    pub first_error: Option<String>,
    /// Per-call latency.
    pub latency: Option<Latency>,
    /// Broker CPU seconds over the phase (unknown for a broker elsewhere).
    pub broker_cpu_s: Option<f64>,
    /// PostgreSQL CPU seconds over the phase, all its processes.
    pub pg_cpu_s: Option<f64>,
    /// This tool's CPU seconds over the phase (its clients).
    pub tool_cpu_s: Option<f64>,
}

impl Phase {
    /// Ops per second.
    pub fn ops_per_s(&self) -> f64 {
        if self.seconds > 0.0 {
            self.ops as f64 / self.seconds
        } else {
            0.0
        }
    }

    /// CPU microseconds per op of `cpu_s` (None without ops or without a reading).
    pub fn micros_per_op(&self, cpu_s: Option<f64>) -> Option<f64> {
        (self.ops > 0).then_some(())?;
        Some(cpu_s? * 1e6 / self.ops as f64)
    }
}

/// Calls of one SQL function per HTTP call over a phase: how many round trips to
/// PostgreSQL a call costs.
#[derive(Debug, Clone, Serialize)]
pub struct RoundTrips {
    /// The function counted.
    pub function: String,
    /// Where the count comes from (`pg_stat_statements` or `pg_stat_user_functions`).
    pub source: String,
    /// Calls of the function over the phase.
    pub function_calls: i64,
    /// HTTP calls over the phase.
    pub http_calls: u64,
}

impl RoundTrips {
    /// Function calls per HTTP call.
    pub fn per_call(&self) -> f64 {
        if self.http_calls == 0 {
            return 0.0;
        }
        self.function_calls as f64 / self.http_calls as f64
    }
}

/// A correctness check's outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Verdict {
    /// Held.
    Ok,
    /// Did not hold: the run exits non-zero.
    Failed,
    /// Could not be checked (said why in the detail).
    NotChecked,
}

/// One correctness check.
#[derive(Debug, Clone, Serialize)]
pub struct Check {
    /// What was checked.
    pub name: String,
    /// Its outcome.
    pub verdict: Verdict,
    /// The numbers compared, or why it was not checked.
    pub detail: String,
}

impl Check {
    /// `left == right` as a check.
    pub fn equal(name: &str, left: i64, right: i64, what: &str) -> Self {
        Self {
            name: name.to_owned(),
            verdict: if left == right {
                Verdict::Ok
            } else {
                Verdict::Failed
            },
            detail: format!(
                "{left} {} {right} {what}",
                if left == right { "=" } else { "!=" }
            ),
        }
    }

    /// A check that could not run.
    pub fn skipped(name: &str, why: impl Into<String>) -> Self {
        Self {
            name: name.to_owned(),
            verdict: Verdict::NotChecked,
            detail: why.into(),
        }
    }
}

/// What the lock phase did.
#[derive(Debug, Clone, Serialize)]
pub enum LocksOutcome {
    /// `--locks` not given.
    NotAsked,
    /// The server answered 404: no lock route.
    NoRoute,
    /// It ran.
    Ran {
        /// Acquire and release calls; `hits` counts completed cycles.
        phase: Box<Phase>,
        /// `locks_apply_v1` calls per lock HTTP call.
        round_trips: Option<RoundTrips>,
        /// Acquisitions of the shared name that were granted, out of those tried.
        contended: (u64, u64),
    },
}

/// Everything a run measured.
#[derive(Debug, Clone, Serialize)]
pub struct Figures {
    /// The server measured.
    pub url: String,
    /// Clients of the throughput phases.
    pub clients: u32,
    /// How each throughput phase ended (`10 s` or `2000 ops a client`).
    pub limit: String,
    /// Single-op put through the broker.
    pub put: Phase,
    /// The same puts as upserts on the baseline table.
    pub baseline_put: Phase,
    /// Single-op get through the broker.
    pub get: Phase,
    /// The same gets as selects on the baseline table.
    pub baseline_get: Phase,
    /// Calls of `--batch` mixed ops.
    pub batch: Phase,
    /// `kv_apply_v1` calls per batch HTTP call.
    pub batch_round_trips: Option<RoundTrips>,
    /// One client, sequential puts.
    pub latency_put: Phase,
    /// One client, sequential gets.
    pub latency_get: Phase,
    /// Concurrent increments of one key.
    pub incr: Phase,
    /// The lock phase.
    pub locks: LocksOutcome,
    /// Correctness checks.
    pub checks: Vec<Check>,
}

impl Figures {
    /// Whether no check failed and no client stopped on an error.
    pub fn clean(&self) -> bool {
        let phases_clean = self.phases().iter().all(|p| p.failed_clients == 0);
        phases_clean && self.checks.iter().all(|c| c.verdict != Verdict::Failed)
    }

    fn phases(&self) -> Vec<&Phase> {
        let mut all = vec![
            &self.put,
            &self.baseline_put,
            &self.get,
            &self.baseline_get,
            &self.batch,
            &self.latency_put,
            &self.latency_get,
            &self.incr,
        ];
        if let LocksOutcome::Ran { phase, .. } = &self.locks {
            all.push(phase);
        }
        all
    }
}

/// `broker / baseline` ops per second (None when the baseline did nothing).
pub fn ratio(broker: &Phase, baseline: &Phase) -> Option<f64> {
    let b = baseline.ops_per_s();
    (b > 0.0).then(|| broker.ops_per_s() / b)
}

fn cell(v: Option<f64>, decimals: usize) -> String {
    v.map_or_else(|| "-".to_owned(), |v| format!("{v:.decimals$}"))
}

/// Ops per second, marked `*` when a client stopped on an error (the rate then covers
/// only the calls answered before it).
fn rate_cell(p: &Phase) -> String {
    let mark = if p.failed_clients > 0 { "*" } else { "" };
    format!("{:.0}{mark}", p.ops_per_s())
}

fn met(ok: bool) -> &'static str {
    if ok {
        "met"
    } else {
        "MISSED"
    }
}

/// The table printed at the end of a run.
pub fn render(f: &Figures) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "queen-bench kv against {}: {} clients, {} a phase",
        f.url, f.clients, f.limit
    );
    let _ = writeln!(
        out,
        "{:<24} {:>7} {:>9} {:>7} {:>7} {:>8} {:>8} {:>8} {:>8}",
        "phase", "clients", "ops/s", "p50 ms", "p99 ms", "PG us", "broker", "tool us", "hits"
    );
    for p in f.phases() {
        let (p50, p99) = match &p.latency {
            Some(l) => (Some(l.p50_ms), Some(l.p99_ms)),
            None => (None, None),
        };
        let _ = writeln!(
            out,
            "{:<24} {:>7} {:>9} {:>7} {:>7} {:>8} {:>8} {:>8} {:>8}",
            p.name,
            p.clients,
            rate_cell(p),
            cell(p50, 2),
            cell(p99, 2),
            cell(p.micros_per_op(p.pg_cpu_s), 1),
            cell(p.micros_per_op(p.broker_cpu_s), 1),
            cell(p.micros_per_op(p.tool_cpu_s), 1),
            p.hits
        );
    }
    let _ = writeln!(
        out,
        "(PG us, broker, tool us: CPU microseconds per op of PostgreSQL, the broker, this tool)"
    );
    if f.phases().iter().any(|p| p.failed_clients > 0) {
        let _ = writeln!(
            out,
            "(* a client stopped on an error: that rate covers only what was answered before)"
        );
    }
    for (what, broker, baseline) in [
        ("put", &f.put, &f.baseline_put),
        ("get", &f.get, &f.baseline_get),
    ] {
        let line = match ratio(broker, baseline) {
            Some(r) => format!(
                "{r:.2} (target >= {RATIO_TARGET}: {})",
                met(r >= RATIO_TARGET)
            ),
            None => "- (the baseline did nothing)".to_owned(),
        };
        let _ = writeln!(out, "{what} broker/baseline ops/s: {line}");
    }
    for p in [&f.latency_put, &f.latency_get] {
        if let Some(l) = &p.latency {
            let _ = writeln!(
                out,
                "{}: p99 {:.2} ms (target <= {P99_TARGET_MS} ms: {})",
                p.name,
                l.p99_ms,
                met(l.p99_ms <= P99_TARGET_MS)
            );
        }
    }
    let _ = writeln!(
        out,
        "{}",
        round_trip_line("batch", f.batch_round_trips.as_ref())
    );
    match &f.locks {
        LocksOutcome::NotAsked => {}
        LocksOutcome::NoRoute => {
            let _ = writeln!(out, "locks: the broker has no /api/v1/locks (skipped)");
        }
        LocksOutcome::Ran {
            phase,
            round_trips,
            contended,
        } => {
            let cycles = if phase.seconds > 0.0 {
                phase.hits as f64 / phase.seconds
            } else {
                0.0
            };
            let _ = writeln!(
                out,
                "locks: {cycles:.0} acquire+release cycles/s; shared name granted {} of {} tries",
                contended.0, contended.1
            );
            let _ = writeln!(out, "{}", round_trip_line("lock", round_trips.as_ref()));
        }
    }
    for c in &f.checks {
        let tag = match c.verdict {
            Verdict::Ok => "ok",
            Verdict::Failed => "FAILED",
            Verdict::NotChecked => "not checked",
        };
        let _ = writeln!(out, "check {tag:<11} {}: {}", c.name, c.detail);
    }
    for p in f.phases() {
        if let Some(e) = &p.first_error {
            let _ = writeln!(
                out,
                "error: {}: {} client(s) stopped; first: {e}",
                p.name, p.failed_clients
            );
        }
    }
    out
}

fn round_trip_line(what: &str, rt: Option<&RoundTrips>) -> String {
    match rt {
        Some(rt) => format!(
            "{what} round trips: {:.2} {} calls per HTTP call ({} calls / {} HTTP calls, from {}; must be 1.0: {})",
            rt.per_call(),
            rt.function,
            rt.function_calls,
            rt.http_calls,
            rt.source,
            met((rt.per_call() - 1.0).abs() < 1e-9)
        ),
        None => format!("{what} round trips: not counted (no statistics source)"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn phase(name: &str, ops: u64, seconds: f64) -> Phase {
        Phase {
            name: name.to_owned(),
            clients: 8,
            calls: ops,
            ops,
            hits: ops,
            seconds,
            failed_clients: 0,
            first_error: None,
            latency: Latency::from_micros(&mut [1000, 2000, 6000]),
            broker_cpu_s: Some(ops as f64 * 50e-6),
            pg_cpu_s: None,
            tool_cpu_s: Some(ops as f64 * 20e-6),
        }
    }

    fn figures() -> Figures {
        Figures {
            url: "http://127.0.0.1:1".to_owned(),
            clients: 8,
            limit: "10 s".to_owned(),
            put: phase("broker put", 9000, 10.0),
            baseline_put: phase("baseline put", 10000, 10.0),
            get: phase("broker get", 7000, 10.0),
            baseline_get: phase("baseline get", 10000, 10.0),
            batch: phase("broker batch x100", 50000, 10.0),
            batch_round_trips: Some(RoundTrips {
                function: "kv_apply_v1".to_owned(),
                source: "pg_stat_user_functions".to_owned(),
                function_calls: 500,
                http_calls: 500,
            }),
            latency_put: phase("latency put", 2000, 1.0),
            latency_get: phase("latency get", 2000, 1.0),
            incr: phase("broker incr", 4000, 2.0),
            locks: LocksOutcome::NoRoute,
            checks: vec![Check::equal("rows", 3, 3, "rows")],
        }
    }

    #[test]
    fn rates_ratios_and_cpu_per_op_are_per_second_and_per_op() {
        let f = figures();
        assert_eq!(f.put.ops_per_s(), 900.0);
        assert_eq!(ratio(&f.put, &f.baseline_put), Some(0.9));
        assert_eq!(
            f.put.micros_per_op(f.put.broker_cpu_s).map(f64::round),
            Some(50.0)
        );
        assert_eq!(f.put.micros_per_op(f.put.pg_cpu_s), None);
        let mut idle = phase("x", 0, 0.0);
        idle.ops = 0;
        assert_eq!(idle.ops_per_s(), 0.0);
        assert_eq!(ratio(&f.put, &idle), None);
        assert_eq!(idle.micros_per_op(Some(1.0)), None);
    }

    #[test]
    fn the_table_names_each_target_and_whether_it_was_met() {
        let text = render(&figures());
        assert!(
            text.contains("put broker/baseline ops/s: 0.90 (target >= 0.8: met)"),
            "{text}"
        );
        assert!(
            text.contains("get broker/baseline ops/s: 0.70 (target >= 0.8: MISSED)"),
            "{text}"
        );
        assert!(
            text.contains("latency put: p99 6.00 ms (target <= 5 ms: MISSED)"),
            "{text}"
        );
        assert!(
            text.contains("1.00 kv_apply_v1 calls per HTTP call"),
            "{text}"
        );
        assert!(text.contains("must be 1.0: met"), "{text}");
        assert!(text.contains("the broker has no /api/v1/locks"), "{text}");
        assert!(
            text.contains("check ok          rows: 3 = 3 rows"),
            "{text}"
        );
        let put_row = text.lines().find(|l| l.starts_with("broker put")).unwrap();
        assert!(
            put_row.contains("     900 ") && put_row.contains(" 50.0 "),
            "{put_row}"
        );
    }

    #[test]
    fn a_failed_check_or_a_stopped_client_makes_the_run_unclean_and_is_printed() {
        let mut f = figures();
        assert!(f.clean());
        f.checks
            .push(Check::equal("incr", 4000, 3999, "increments"));
        assert!(!f.clean());
        assert!(render(&f).contains("check FAILED      incr: 4000 != 3999 increments"));
        let mut f = figures();
        f.get.failed_clients = 2;
        f.get.first_error = Some("503 busy".to_owned());
        assert!(!f.clean());
        let text = render(&f);
        assert!(text.contains("error: broker get: 2 client(s) stopped; first: 503 busy"));
        let get_row = text.lines().find(|l| l.starts_with("broker get")).unwrap();
        assert!(get_row.contains(" 700* "), "{get_row}");
        assert!(text.contains("(* a client stopped on an error"), "{text}");
        f.checks = vec![Check::skipped("rows", "no queen.kv table")];
        f.get.failed_clients = 0;
        assert!(f.clean(), "a check that could not run is no failure");
    }

    #[test]
    fn round_trips_other_than_one_are_missed_and_absent_ones_said_so() {
        let mut f = figures();
        f.batch_round_trips.as_mut().unwrap().function_calls = 50_000;
        let text = render(&f);
        assert!(
            text.contains("100.00 kv_apply_v1 calls per HTTP call"),
            "{text}"
        );
        assert!(text.contains("must be 1.0: MISSED"), "{text}");
        f.batch_round_trips = None;
        assert!(render(&f).contains("batch round trips: not counted"));
    }
}
