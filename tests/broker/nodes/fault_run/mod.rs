//! A randomized fault run, the Jepsen way: three broker processes on one PostgreSQL this
//! test starts (and restarts), producers and consumers through every node over HTTP, a
//! [`nemesis`] that injects one fault every few seconds from a seeded schedule, and a
//! [`checker`] that reads every answer and every delivery at the end.
//!
//! `cargo test` runs it for 60 s. Parameters (environment): `QUEEN_FAULT_SEED` (the
//! schedule's seed; printed, random when unset), `QUEEN_FAULT_SECS` (60), `QUEEN_FAULT_GAP_MS`
//! (mean pause between faults, 2000), `QUEEN_FAULT_PRODUCERS` (3), `QUEEN_FAULT_PUSH_GAP_MS`
//! (a producer's pause between pushes, 20), `QUEEN_FAULT_BATCH` (messages per push, 5). The
//! ten-minute run (see `bench/faults.sh`):
//!
//! ```sh
//! QUEEN_FAULT_SECS=600 cargo test --test broker nodes::fault_run -- --nocapture
//! ```

mod checker;
mod checker_checks;
mod history;
mod nemesis;
mod workload;

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;

use super::cluster::{Options, TestCluster};
use super::wait_mesh_connected;
use crate::support::private_postgres::PrivatePostgres;
use history::History;
use nemesis::{Fault, MeshCutter, Nemesis, SmallDisk, SMALL_DISK_NODE};
use workload::{Plan, Workload, POP_BATCH};

const QUEUE: &str = "faults";
/// Short, so a paused node's leases run out and come back within the run.
const LEASE: Duration = Duration::from_secs(3);
/// How long past the drain's deadline the readers may go on catching up while they still
/// receive messages.
const DRAIN_GRACE: Duration = Duration::from_secs(60);
/// A drain past its deadline ends once no delivery came for this long (longer than a lease,
/// so a message whose lease ran out is popped again before it ends).
const DRAIN_STALL: Duration = Duration::from_secs(5);
const NODES: usize = 3;
/// The small spool disk of node C.
const DISK_MEGABYTES: u32 = 16;

/// The run's parameters.
#[derive(Debug)]
struct Params {
    seed: u64,
    duration: Duration,
    fault_gap: Duration,
    producers: usize,
    push_gap: Duration,
    batch: usize,
}

impl Params {
    fn from_env() -> Self {
        let number = |name: &str, default: u64| -> u64 {
            match std::env::var(name) {
                Ok(v) => v
                    .parse()
                    .unwrap_or_else(|_| panic!("{name}={v} is not a number")),
                Err(_) => default,
            }
        };
        let random_seed = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(1);
        Params {
            seed: number("QUEEN_FAULT_SEED", random_seed),
            duration: Duration::from_secs(number("QUEEN_FAULT_SECS", 60)),
            fault_gap: Duration::from_millis(number("QUEEN_FAULT_GAP_MS", 2000)),
            producers: (number("QUEEN_FAULT_PRODUCERS", 3) as usize).max(NODES),
            push_gap: Duration::from_millis(number("QUEEN_FAULT_PUSH_GAP_MS", 20)),
            batch: number("QUEEN_FAULT_BATCH", 5).max(1) as usize,
        }
    }
}

#[actix_rt::test]
async fn a_randomized_fault_run_loses_nothing_and_keeps_every_partition_in_order() {
    // Arrange: PostgreSQL, the small disk, the cgroups, three nodes, the queue.
    let params = Params::from_env();
    eprintln!(
        "fault run: seed {} (QUEEN_FAULT_SEED={} to repeat the schedule); {params:?}",
        params.seed, params.seed
    );
    let server = tokio::task::spawn_blocking(PrivatePostgres::start)
        .await
        .expect("start PostgreSQL");
    let disk = SmallDisk::mount(DISK_MEGABYTES)
        .map_err(|e| eprintln!("fault run: skipping the spool disk fault: {e}"))
        .ok();
    let cutter = MeshCutter::new(NODES)
        .map_err(|e| eprintln!("fault run: skipping the mesh cut fault: {e}"))
        .ok();
    let mut options = Options::meshed()
        .with("QUEEN_HOTLIST_RESEED_MS", "500")
        .with("QUEEN_POOL_TIMEOUT_MS", "1000");
    if let Some(disk) = &disk {
        let dir = disk.spool_dir();
        options = options.with_node(SMALL_DISK_NODE, "FILE_BUFFER_DIR", &dir.to_string_lossy());
    }
    if let Some(cutter) = &cutter {
        for i in 0..NODES {
            options = options.in_cgroup(i, cutter.cgroup(i));
        }
    }
    let cluster = TestCluster::start_on(server.config(), NODES, options).await;
    wait_mesh_connected(&cluster).await;
    cluster
        .node(0)
        .configure(QUEUE, json!({ "leaseTime": LEASE.as_secs() }))
        .await;
    let start = Instant::now();
    let plan = Plan {
        nodes: cluster.nodes().iter().map(|n| n.url()).collect(),
        queue: QUEUE,
        producers: params.producers,
        batch: params.batch,
        push_gap: params.push_gap,
        bundle_one_in: 3,
        seed: params.seed,
    };
    let mut nemesis = Nemesis::new(
        cluster,
        server,
        cutter,
        disk,
        params.seed,
        LEASE,
        params.fault_gap,
        start,
    );
    let available = nemesis.available();

    // Act: load and faults, then the producers stop and the consumers drain.
    let history = Arc::new(History::default());
    let mut workload = Workload::start(&plan, &history);
    nemesis.run(start + params.duration).await;
    workload.stop_producers().await;
    let drain_for = (params.duration / 3).clamp(Duration::from_secs(15), Duration::from_secs(60));
    let drained_by = Instant::now() + drain_for;
    // A reader still catching up on a loaded machine is late, not lost: past `drained_by`
    // the drain goes on while deliveries keep coming, up to DRAIN_GRACE more.
    let mut delivered = (0, Instant::now());
    loop {
        let deliveries = history.deliveries();
        if deliveries.len() > delivered.0 {
            delivered = (deliveries.len(), Instant::now());
        }
        let verdict = checker::check(
            &history.pushed(),
            &deliveries,
            LEASE,
            *history.auto_ack_pops_lost.lock().unwrap(),
            POP_BATCH,
            &nemesis.windows,
            start,
        );
        let now = Instant::now();
        let stalled = now.duration_since(delivered.1) >= DRAIN_STALL;
        if verdict.drained() || (now >= drained_by && stalled) || now >= drained_by + DRAIN_GRACE {
            break;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    workload.stop_consumers().await;
    let spool_after = nemesis.probe_spool(QUEUE).await;
    let verdict = checker::check(
        &history.pushed(),
        &history.deliveries(),
        LEASE,
        *history.auto_ack_pops_lost.lock().unwrap(),
        POP_BATCH,
        &nemesis.windows,
        start,
    );

    // Report: the figures, the faults, the history on disk.
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("fault-run-{}", params.seed));
    std::fs::create_dir_all(&dir).expect("the run's folder");
    history
        .write(&dir.join("history.jsonl"), start)
        .expect("write the history");
    std::fs::write(dir.join("faults.log"), nemesis.log.join("\n")).expect("write the faults");
    let fired: Vec<String> = Fault::ALL
        .iter()
        .map(|f| {
            format!(
                "{} {}",
                f.name(),
                nemesis.fired.get(f).copied().unwrap_or(0)
            )
        })
        .collect();
    let table = verdict.table();
    let failures: Vec<String> = history
        .failures()
        .into_iter()
        .map(|((what, status, error), n)| format!("  {n:>6} {what} {status} {error}"))
        .collect();
    let spool_after = match spool_after {
        Some(said) => format!("node C's spool, its disk emptied, answers a push with: {said}\n"),
        None => String::new(),
    };
    let table = format!("{table}{spool_after}");
    let figures = format!("{table}failed requests:\n{}\n", failures.join("\n"));
    std::fs::write(dir.join("figures.txt"), figures).expect("write the figures");
    eprintln!(
        "fault run: seed {}, {:?} of faults: {}\nfailed requests (count, what, status, \
         error; status 0 = no HTTP answer):\n{}\n{table}history, faults and figures in {}",
        params.seed,
        params.duration,
        fired.join(", "),
        failures.join("\n"),
        dir.display()
    );

    // Assert
    let missing: Vec<&str> = available
        .iter()
        .filter(|f| !nemesis.fired.contains_key(f))
        .map(|f| f.name())
        .collect();
    assert!(missing.is_empty(), "faults that never fired: {missing:?}");
    assert_eq!(
        verdict.lost(),
        0,
        "seed {}: messages answered as stored were lost",
        params.seed
    );
    assert_eq!(
        verdict.order_violations(),
        0,
        "seed {}: partitions out of order",
        params.seed
    );
}
