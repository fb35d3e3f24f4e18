//! The figures of a parked-pops run, their arithmetic, and the table printed at its end.

use serde::Serialize;

use crate::stats::Latency;

/// What one parked-pops run measured.
#[derive(Debug, Clone, Serialize)]
pub struct Figures {
    /// Pops parked over the groups (the single-wake pops come on top).
    pub pops: usize,
    /// Consumer groups they are spread over.
    pub groups: usize,
    /// Queues the groups are spread over.
    pub queues: usize,
    /// Whether the pops travelled as HTTP/2 streams (else HTTP/1.1, a connection each).
    pub http2: bool,
    /// Connections the pops travelled on.
    pub pop_connections: usize,
    /// Idle keep-alive connections opened first, for comparison.
    pub idle_connections: usize,
    /// Broker RSS before any pop was parked, KiB.
    pub rss_start_kib: u64,
    /// Broker RSS with the pops parked, KiB.
    pub rss_parked_kib: u64,
    /// Broker RSS before the idle connections were opened (the pops still parked), KiB.
    pub rss_before_idle_kib: u64,
    /// Broker RSS with the idle connections open too, KiB.
    pub rss_idle_kib: u64,
    /// RSS growth per idle keep-alive connection, bytes.
    pub bytes_per_idle_connection: f64,
    /// RSS growth per parked pop (its connection included; the single-wake pops are
    /// counted), bytes.
    pub bytes_per_parked_pop: f64,
    /// Broker CPU seconds per second while the pops waited.
    pub idle_cpu: f64,
    /// Pops the broker reported parked when the idle window ended.
    pub parked_reported: i64,
    /// Single-wake pushes sent (each into the one pop parked on its queue).
    pub single_wakes: usize,
    /// Single-wake pops answered with their message within the tool's wait.
    pub single_wakes_seen: usize,
    /// From the start of a single-wake push to its pop's answer.
    pub single_wake: Option<Latency>,
    /// From the start of a single-wake push to its own answer: the push's commit, which
    /// every wake waits for, so a tail here is not the wake path's.
    pub single_push: Option<Latency>,
    /// From a single-wake push's own answer to its pop's answer: the wake path's part,
    /// without the push's commit.
    pub single_after_push: Option<Latency>,
    /// From the start of a push to the answer of each pop it woke.
    pub wake: Option<Latency>,
    /// Pops the wake pushes were expected to answer, and those that answered.
    pub wakes_expected: usize,
    /// Pops answered with the pushed message.
    pub wakes_seen: usize,
    /// Push then pop of another queue, before any pop was parked.
    pub other_queue_before: Option<Latency>,
    /// The same while every pop was parked.
    pub other_queue_parked: Option<Latency>,
    /// The machine's 1-minute load average at the start and at the end.
    pub load: (f64, f64),
}

/// RSS growth per item, bytes (0 for no items; negative when RSS shrank).
pub fn bytes_per_item(before_kib: u64, after_kib: u64, items: usize) -> f64 {
    if items == 0 {
        return 0.0;
    }
    (after_kib as f64 - before_kib as f64) * 1024.0 / items as f64
}

/// CPU seconds per second over a window.
pub fn cpu_rate(before_s: f64, after_s: f64, window_s: f64) -> f64 {
    if window_s <= 0.0 {
        return 0.0;
    }
    (after_s - before_s).max(0.0) / window_s
}

/// Which queue and which consumer group pop `i` of a run parks on: groups round robin over
/// the pops, queues round robin over the groups (so each group belongs to one queue).
pub fn placement(i: usize, groups: usize, queues: usize) -> (usize, usize) {
    let group = i % groups.max(1);
    (group % queues.max(1), group)
}

/// Groups that live on `queue` (what one push there wakes).
pub fn groups_on_queue(queue: usize, groups: usize, queues: usize) -> usize {
    let queues = queues.max(1);
    groups / queues + usize::from(queue < groups % queues)
}

fn latency_cell(l: &Option<Latency>) -> String {
    match l {
        Some(l) => format!(
            "p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms ({} samples)",
            l.p50_ms, l.p99_ms, l.max_ms, l.samples
        ),
        None => "no samples".to_owned(),
    }
}

/// The table printed at the end of a run.
pub fn render(f: &Figures) -> String {
    let mib = |kib: u64| kib as f64 / 1024.0;
    let rows = [
        (
            "parked pops / groups / queues".to_owned(),
            format!("{} / {} / {}", f.pops, f.groups, f.queues),
        ),
        (
            "pops travel on".to_owned(),
            format!(
                "{} {} connections",
                f.pop_connections,
                if f.http2 { "HTTP/2" } else { "HTTP/1.1" }
            ),
        ),
        (
            "broker RSS: start, parked, + idle conns".to_owned(),
            format!(
                "{:.1} MiB, {:.1} MiB, {:.1} -> {:.1} MiB",
                mib(f.rss_start_kib),
                mib(f.rss_parked_kib),
                mib(f.rss_before_idle_kib),
                mib(f.rss_idle_kib)
            ),
        ),
        (
            format!("per idle keep-alive connection ({})", f.idle_connections),
            format!("{:.0} bytes", f.bytes_per_idle_connection),
        ),
        (
            "per parked pop".to_owned(),
            format!("{:.0} bytes", f.bytes_per_parked_pop),
        ),
        (
            "idle CPU while parked".to_owned(),
            format!("{:.3} CPU-s/s ({} parked)", f.idle_cpu, f.parked_reported),
        ),
        (
            "push -> its one parked pop".to_owned(),
            format!(
                "{} ({}/{} answered)",
                latency_cell(&f.single_wake),
                f.single_wakes_seen,
                f.single_wakes
            ),
        ),
        (
            "  that push's own answer".to_owned(),
            latency_cell(&f.single_push),
        ),
        (
            "  from that answer to the pop's".to_owned(),
            latency_cell(&f.single_after_push),
        ),
        (
            "push -> a queue's woken pops".to_owned(),
            format!(
                "{} ({}/{} answered)",
                latency_cell(&f.wake),
                f.wakes_seen,
                f.wakes_expected
            ),
        ),
        (
            "other queue push+pop, before".to_owned(),
            latency_cell(&f.other_queue_before),
        ),
        (
            "other queue push+pop, parked".to_owned(),
            latency_cell(&f.other_queue_parked),
        ),
        (
            "load average (1 min) start, end".to_owned(),
            format!("{:.2}, {:.2}", f.load.0, f.load.1),
        ),
    ];
    let width = rows.iter().map(|(k, _)| k.len()).max().unwrap_or(0);
    rows.iter()
        .map(|(k, v)| format!("{k:<width$}  {v}\n"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn growth_per_item_is_in_bytes_from_kib_and_may_be_negative() {
        assert_eq!(bytes_per_item(1000, 1008, 8), 1024.0);
        assert_eq!(bytes_per_item(40_000, 72_000, 8000), 4096.0);
        assert_eq!(bytes_per_item(1008, 1000, 8), -1024.0);
        assert_eq!(bytes_per_item(1000, 2000, 0), 0.0);
    }

    #[test]
    fn cpu_rate_is_seconds_per_second_and_never_negative() {
        assert!((cpu_rate(10.0, 11.5, 10.0) - 0.15).abs() < 1e-12);
        assert_eq!(cpu_rate(10.0, 9.0, 10.0), 0.0);
        assert_eq!(cpu_rate(10.0, 11.0, 0.0), 0.0);
    }

    #[test]
    fn pops_spread_evenly_over_groups_and_each_group_keeps_one_queue() {
        let (groups, queues) = (1000, 20);
        let mut per_group = vec![0; groups];
        for i in 0..8000 {
            let (queue, group) = placement(i, groups, queues);
            assert_eq!(queue, group % queues);
            per_group[group] += 1;
        }
        assert!(per_group.iter().all(|&n| n == 8));
        assert_eq!(groups_on_queue(0, groups, queues), 50);
        assert_eq!(groups_on_queue(0, 7, 4), 2);
        assert_eq!(groups_on_queue(3, 7, 4), 1);
        let total: usize = (0..4).map(|q| groups_on_queue(q, 7, 4)).sum();
        assert_eq!(total, 7);
    }

    #[test]
    fn the_table_names_every_figure() {
        let f = Figures {
            pops: 8000,
            groups: 1000,
            queues: 20,
            http2: true,
            pop_connections: 100,
            idle_connections: 8000,
            rss_start_kib: 40_960,
            rss_parked_kib: 73_728,
            rss_before_idle_kib: 75_776,
            rss_idle_kib: 83_968,
            bytes_per_idle_connection: 1048.6,
            bytes_per_parked_pop: 4194.3,
            idle_cpu: 0.05,
            parked_reported: 8000,
            single_wakes: 2,
            single_wakes_seen: 1,
            single_wake: Latency::from_micros(&mut [4000]),
            single_push: Latency::from_micros(&mut [2500]),
            single_after_push: Latency::from_micros(&mut [1500]),
            wake: Latency::from_micros(&mut [1000, 2000, 3000]),
            wakes_expected: 3,
            wakes_seen: 3,
            other_queue_before: None,
            other_queue_parked: None,
            load: (1.0, 2.0),
        };
        let table = render(&f);
        assert!(table.contains("8000 / 1000 / 20"));
        assert!(table.contains("100 HTTP/2 connections"));
        assert!(table.contains("40.0 MiB, 72.0 MiB, 74.0 -> 82.0 MiB"));
        assert!(table.contains("4194 bytes"));
        assert!(table.contains("0.050 CPU-s/s (8000 parked)"));
        assert!(table.contains("p50 2.00 ms, p99 3.00 ms"));
        assert!(table.contains("(3/3 answered)"));
        assert!(table.contains("  that push's own answer"));
        assert!(table.contains("  from that answer to the pop's          p50 1.50 ms, p99 1.50 ms"));
        assert!(table.contains("p50 2.50 ms, p99 2.50 ms, max 2.50 ms (1 samples)\n"));
        assert!(table.contains("p50 4.00 ms, p99 4.00 ms, max 4.00 ms (1 samples) (1/2 answered)"));
    }
}
