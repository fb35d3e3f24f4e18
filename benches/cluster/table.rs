//! The printed result: one row per metric, 1 node and 3 nodes side by side, and the ratio.

use super::{Figures, Settings};
use crate::support;

/// Prints the settings, the caveat about the machine, the table and the exactly-once verdict.
pub(crate) fn print_table(s: &Settings, one: &Figures, three: &Figures) {
    println!(
        "\nqueen cluster bench: {} messages, {} producers and {} consumers spread round robin over the nodes,",
        s.messages, s.producers, s.consumers
    );
    println!(
        "batch 100, {} partitions, payload ~60 B; every node QUEEN_HTTP_WORKERS={}, DB_POOL_SIZE 20, one shared PostgreSQL.",
        s.partitions, s.http_workers
    );
    println!("NOTE: this machine has 2 cores, shared with other work. The three nodes, PostgreSQL and this load");
    println!("generator all run on those 2 cores, so 3 nodes cannot add CPU here: the ratio shows what the");
    println!("mesh and the extra processes cost, not what 3 machines would scale to.\n");
    println!(
        "{:<48} {:>12} {:>12} {:>8}",
        "metric", "1 node", "3 nodes", "3 / 1"
    );
    let row = |name: &str, a: f64, b: f64, digits: usize| {
        println!("{name:<48} {a:>12.digits$} {b:>12.digits$} {:>7.2}x", b / a);
    };
    row("push msg/s", one.push_rate, three.push_rate, 0);
    row("pop+ack msg/s", one.pop_rate, three.pop_rate, 0);
    let tally = |f: &Figures| format!("{} / {}", f.drain.duplicates, f.drain.missing);
    println!(
        "{:<48} {:>12} {:>12}",
        "duplicates / missing",
        tally(one),
        tally(three)
    );
    for (name, q) in [("p50", 0.50), ("p90", 0.90), ("p99", 0.99), ("max", 1.0)] {
        let (a, b) = (
            support::quantile(&one.wake, q),
            support::quantile(&three.wake, q),
        );
        row(
            &format!("wake {name} ms (1: same node; 3: B parked, A push)"),
            a,
            b,
            1,
        );
    }
    let per_k = |ms: f64| ms * 1000.0 / s.messages as f64;
    let (a, b) = (one, three);
    for (name, one_ms, three_ms) in [
        (
            "broker CPU ms / 1000 msg, push",
            a.push_cpu.brokers_ms,
            b.push_cpu.brokers_ms,
        ),
        (
            "broker CPU ms / 1000 msg, pop+ack",
            a.pop_cpu.brokers_ms,
            b.pop_cpu.brokers_ms,
        ),
        (
            "PostgreSQL CPU ms / 1000 msg, push",
            a.push_cpu.postgres_ms,
            b.push_cpu.postgres_ms,
        ),
        (
            "PostgreSQL CPU ms / 1000 msg, pop+ack",
            a.pop_cpu.postgres_ms,
            b.pop_cpu.postgres_ms,
        ),
    ] {
        row(name, per_k(one_ms), per_k(three_ms), 1);
    }

    if let Some(same) = &three.wake_same_node {
        let q = |q| support::quantile(same, q);
        println!(
            "\n3 nodes, parked and pushed on the same node B: wake p50 {:.1} / p90 {:.1} / p99 {:.1} / max {:.1} ms",
            q(0.5), q(0.9), q(0.99), q(1.0)
        );
    }
    println!(
        "wakes by source on the waiting node over {} trials: 1 node {}; 3 nodes {}",
        s.trials, one.wakes_by_source, three.wakes_by_source
    );
    let slowest = |f: &Figures| {
        let trials: Vec<String> = f
            .slowest_wakes
            .iter()
            .map(|(trial, ms)| format!("#{trial} {ms:.1} ms"))
            .collect();
        trials.join(", ")
    };
    println!(
        "slowest wake trials: 1 node {}; 3 nodes {}",
        slowest(one),
        slowest(three)
    );
    println!(
        "3 nodes, mesh counters over the cross-node wake phase: pushing node A {}; waiting node B {}",
        three.pusher_mesh, three.waiter_mesh
    );
    for (label, f) in [("1 node", one), ("3 nodes", three)] {
        if f.drain.exactly_once() && f.push_refused == 0 {
            println!(
                "exactly once, {label}: yes ({} deliveries)",
                f.drain.deliveries
            );
        } else {
            println!(
                "!!! EXACTLY ONCE VIOLATED, {label}: {}",
                f.drain.describe(f.push_refused)
            );
        }
    }
}
