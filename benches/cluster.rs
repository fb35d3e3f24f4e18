//! A 1-node cluster against a 3-node cluster of real `queen` processes, on one PostgreSQL in
//! the same run: push msg/s, pop+ack msg/s with an exactly-once check, the wake latency of a
//! parked consumer (1 node: parked and pushed on the same node; 3 nodes: parked on node B,
//! pushed through node A, so the wake crosses the peer mesh), and the CPU the brokers and
//! PostgreSQL spend per 1000 messages.
//!
//! Run: `cargo bench --bench cluster` (env: QUEEN_BENCH_MESSAGES, default 60000;
//! QUEEN_BENCH_PRODUCERS and QUEEN_BENCH_CONSUMERS, default 6; QUEEN_BENCH_PARTITIONS,
//! default 12; QUEEN_BENCH_WAKE_TRIALS, default 200; QUEEN_BENCH_HTTP_WORKERS, default 2).
//!
//! Each node is the release binary in its own process (`QUEEN_HTTP_WORKERS` 2, the default
//! pool of 20, `RUST_LOG=warn`, every node's mesh address in `QUEEN_PEERS`). Producers and
//! consumers are spread round robin over the nodes. Each cluster size gets a fresh database
//! on the shared server, and each phase a fresh queue (the drain empties the push's queue).
//! Everything this bench starts is stopped when it returns, fails or panics; the brokers
//! also die with the bench process if it is killed.

// A bench target's root looks for modules beside it, so the bench's own parts are pointed
// at benches/cluster/ (where cargo does not mistake them for bench targets).
#[path = "cluster/brokers.rs"]
mod brokers;
#[path = "cluster/cpu.rs"]
mod cpu;
#[path = "cluster/phases.rs"]
mod phases;
mod support;
#[path = "cluster/table.rs"]
mod table;
#[path = "cluster/wire.rs"]
mod wire;

use std::path::Path;
use std::time::Duration;

use queen::db::embedded::EmbeddedPostgres;
use serde_json::Value;

use brokers::Cluster;
use cpu::Cpu;
use phases::{pop_ack_phase, push_phase, wake_phase, DrainOutcome};
use wire::{configure, counter_delta, metrics};

/// Names the embedded server's socket file (`core` uses 5499, `pop_paths` 5498).
const PG_PORT: u16 = 5497;

struct Settings {
    messages: usize,
    producers: usize,
    consumers: usize,
    partitions: usize,
    trials: usize,
    http_workers: usize,
}

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn main() -> anyhow::Result<()> {
    let s = Settings {
        messages: env_usize("QUEEN_BENCH_MESSAGES", 60_000),
        producers: env_usize("QUEEN_BENCH_PRODUCERS", 6),
        consumers: env_usize("QUEEN_BENCH_CONSUMERS", 6),
        partitions: env_usize("QUEEN_BENCH_PARTITIONS", 12),
        trials: env_usize("QUEEN_BENCH_WAKE_TRIALS", 200),
        http_workers: env_usize("QUEEN_BENCH_HTTP_WORKERS", 2),
    };
    let (pg, dir) = support::start_postgres(PG_PORT)?;
    // Declared after `dir`, so on a panic PostgreSQL stops before its folder is removed.
    let mut pg = pg;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let result = runtime.block_on(run(&s, &pg, dir.path()));
    pg.stop()?;
    result
}

/// What one cluster size measured.
struct Figures {
    push_rate: f64,
    push_refused: usize,
    pop_rate: f64,
    drain: DrainOutcome,
    push_cpu: Cpu,
    pop_cpu: Cpu,
    wake: Vec<f64>,
    /// 3 nodes only: parked and pushed on the same node, to tell the mesh from the load.
    wake_same_node: Option<Vec<f64>>,
    /// The three slowest wake trials: (trial, ms).
    slowest_wakes: Vec<(usize, f64)>,
    /// Over the wake phase: the waiting node's wakes by source, and the mesh counters of
    /// the waiting and the pushing node.
    wakes_by_source: Value,
    waiter_mesh: Value,
    pusher_mesh: Value,
}

async fn run(s: &Settings, pg: &EmbeddedPostgres, dir: &Path) -> anyhow::Result<()> {
    let postmaster = cpu::postmaster_pid(&dir.join("data/pgdata"))?;
    let http = reqwest::Client::builder()
        .pool_max_idle_per_host(256)
        .timeout(Duration::from_secs(30))
        .build()?;
    let mut figures = Vec::new();
    for nodes in [1usize, 3] {
        let db = format!("bench_cluster_{nodes}");
        let pg_config = support::fresh_database(pg, &db).await?;
        let database_url = format!(
            "host={} port={PG_PORT} user=queen dbname={db}",
            pg.socket_dir().display()
        );
        let mut cluster = Cluster::start(nodes, &database_url, s.http_workers, dir).await?;
        let measured = measure(s, &http, &cluster, &pg_config, postmaster).await;
        // Before the stop: a stopping cluster's peers log their disconnects, as they should.
        cluster.print_logs();
        cluster.stop();
        figures.push(measured?);
    }
    table::print_table(s, &figures[0], &figures[1]);
    let broken: Vec<String> = figures
        .iter()
        .zip(["1 node", "3 nodes"])
        .filter(|(f, _)| !f.drain.exactly_once() || f.push_refused > 0)
        .map(|(f, label)| format!("{label}: {}", f.drain.describe(f.push_refused)))
        .collect();
    anyhow::ensure!(
        broken.is_empty(),
        "EXACTLY-ONCE VIOLATED: {}",
        broken.join("; ")
    );
    Ok(())
}

async fn measure(
    s: &Settings,
    http: &reqwest::Client,
    cluster: &Cluster,
    pg_config: &tokio_postgres::Config,
    postmaster: u32,
) -> anyhow::Result<Figures> {
    let n = cluster.nodes.len();
    let admin = support::connect(pg_config).await?;
    let bases = cluster.bases();
    let queue = format!("cluster-{n}");
    configure(http, &bases[0], &queue).await?;

    admin.batch_execute("CHECKPOINT").await?;
    let before = Cpu::sample(&cluster.pids(), postmaster)?;
    let (push_rate, push_refused) = push_phase(s, http, &bases, &queue).await?;
    let push_cpu = Cpu::sample(&cluster.pids(), postmaster)?.since(&before);

    admin.batch_execute("CHECKPOINT").await?;
    let before = Cpu::sample(&cluster.pids(), postmaster)?;
    let (pop_rate, drain) = pop_ack_phase(s, http, &bases, &queue).await?;
    let pop_cpu = Cpu::sample(&cluster.pids(), postmaster)?.since(&before);

    // 1 node: the baseline, same node. 3 nodes: parked on B, pushed through A.
    let (waiter, pusher) = if n == 1 { (0, 0) } else { (1, 0) };
    let (waiter_before, pusher_before) = (
        metrics(http, &bases[waiter]).await?,
        metrics(http, &bases[pusher]).await?,
    );
    let wake_queue = format!("wake-{n}");
    let wake = wake_phase(s, http, &bases[waiter], &bases[pusher], &wake_queue).await?;
    let (waiter_after, pusher_after) = (
        metrics(http, &bases[waiter]).await?,
        metrics(http, &bases[pusher]).await?,
    );
    let mut slowest_wakes: Vec<(usize, f64)> = wake.iter().copied().enumerate().collect();
    slowest_wakes.sort_by(|a, b| b.1.total_cmp(&a.1));
    slowest_wakes.truncate(3);
    let mut wake = wake;
    wake.sort_by(f64::total_cmp);
    let wake_same_node = match n {
        1 => None,
        _ => {
            let mut same = wake_phase(s, http, &bases[waiter], &bases[waiter], "wake-same").await?;
            same.sort_by(f64::total_cmp);
            Some(same)
        }
    };
    Ok(Figures {
        push_rate,
        push_refused,
        pop_rate,
        drain,
        push_cpu,
        pop_cpu,
        wake,
        wake_same_node,
        slowest_wakes,
        wakes_by_source: counter_delta(&waiter_before["wakes"], &waiter_after["wakes"]),
        waiter_mesh: counter_delta(&waiter_before["mesh"], &waiter_after["mesh"]),
        pusher_mesh: counter_delta(&pusher_before["mesh"], &pusher_after["mesh"]),
    })
}
