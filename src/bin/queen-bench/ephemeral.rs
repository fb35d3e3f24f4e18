//! `queen-bench ephemeral`: ephemeral queues (`/api/v1/ephemeral/*`) against durable ones,
//! in the same run, on the same broker.
//!
//! Phases: push + pop + ack at `--batch` through one node, ephemeral then durable (same
//! callers, payloads and batch; msg/s, the ratio, broker CPU per message); push → delivery
//! latency to a parked consumer on the owner node and forwarded (producer and consumer
//! both on the node that does not own the queue); a flood of `dropOldest` queues and one
//! `reject` queue against `QUEEN_EPHEMERAL_MAX_BYTES`, sampling the broker's resident
//! memory. Without `--url` the tool starts node `a` and, for the forwarded phase, node
//! `b` on the same database; with `--url` it drives that server, and skips the forwarded
//! phase and, without `--broker-pid`, the flood.
//!
//! Map: [`args`] (command line), [`client`] (both systems' calls), [`throughput`],
//! [`latency`], [`flood`] (the phases), [`cluster`] (the two brokers).

use anyhow::Context;

mod args;
mod client;
mod cluster;
mod flood;
mod latency;
mod throughput;

pub use args::EphemeralArgs;
use cluster::{queue_owned_by, Cluster};
use flood::Flood;
use throughput::System;

use crate::stats::Latency;

/// Runs the phases and prints their figures; fails when a phase could not finish.
pub async fn main(args: EphemeralArgs) -> anyhow::Result<()> {
    args.validate().map_err(anyhow::Error::msg)?;
    // Ctrl-C drops the run, whose cluster stops the brokers this tool started.
    tokio::select! {
        r = run(&args) => r,
        _ = tokio::signal::ctrl_c() => anyhow::bail!("interrupted"),
    }
}

/// The tag that keeps this run's queues apart from any other's.
fn tag() -> String {
    format!("eb{}", std::process::id())
}

async fn run(args: &EphemeralArgs) -> anyhow::Result<()> {
    let tag = tag();
    let Some(url) = &args.url else {
        return run_started(args, &tag).await;
    };
    println!("server {url} (given)");
    throughput_lines(args, url, args.broker_pid, &tag).await?;
    let owner = latency::run(url, url, &format!("{tag}-lat"), args.latency_samples).await?;
    println!("{}", latency_line("served", &owner, 2.0));
    println!("latency forwarded: skipped (--url: this tool starts no second node)");
    match args.broker_pid {
        Some(pid) if args.flood_seconds > 0.0 => {
            let cap = match client::Client::new(url)?.metrics().await {
                Ok(m) => m["ephemeral"]["maxBytes"].as_u64(),
                Err(_) => None,
            }
            .unwrap_or_else(|| args.cap_bytes());
            let f = flood_run(args, url, pid, cap, |k| format!("{tag}-flood-{k}")).await?;
            print_flood(&f);
        }
        _ => println!("flood: skipped (--url without --broker-pid: no resident memory to read)"),
    }
    Ok(())
}

async fn run_started(args: &EphemeralArgs, tag: &str) -> anyhow::Result<()> {
    let mut cluster = Cluster::start_a(&args.launch, args.cap_bytes()).await?;
    let a_url = cluster.a.url.clone();
    let a_pid = cluster.a.pid();
    println!(
        "server {a_url} (node a, started; QUEEN_EPHEMERAL_MAX_BYTES {} MiB)",
        args.cap_mib
    );
    throughput_lines(args, &a_url, a_pid, tag).await?;
    let b_url = cluster.start_b().await?.url.clone();
    println!("node b {b_url} started on node a's database, meshed");
    let owned = queue_owned_by("a", &format!("{tag}-lat"));
    let owner = latency::run(&a_url, &a_url, &owned, args.latency_samples).await?;
    println!("{}", latency_line("owner node", &owner, 2.0));
    let owned = queue_owned_by("a", &format!("{tag}-fwd"));
    let forwarded = latency::run(&b_url, &b_url, &owned, args.latency_samples).await?;
    println!(
        "{}",
        latency_line("forwarded (b → owner a)", &forwarded, 5.0)
    );
    if args.flood_seconds > 0.0 {
        let pid = a_pid.context("node a has no pid")?;
        let f = flood_run(args, &a_url, pid, args.cap_bytes(), |k| {
            queue_owned_by("a", &format!("{tag}-flood{k}"))
        })
        .await?;
        print_flood(&f);
    }
    drop(cluster);
    Ok(())
}

async fn throughput_lines(
    args: &EphemeralArgs,
    url: &str,
    pid: Option<i32>,
    tag: &str,
) -> anyhow::Result<()> {
    println!(
        "push + pop + ack at batch {}, {} clients × {} cycles, {} B payloads, one node:",
        args.batch, args.clients, args.cycles, args.payload_bytes
    );
    let cpu = |c: Option<f64>| c.map_or("n/a".to_owned(), |c| format!("{c:.1} µs"));
    let eph = throughput::run(url, System::Ephemeral, &format!("{tag}-eph"), args, pid).await?;
    println!(
        "  ephemeral  {:>9.0} msg/s  broker CPU {} per message",
        eph.rate(),
        cpu(eph.broker_cpu_us)
    );
    if args.no_durable {
        return Ok(());
    }
    let dur = throughput::run(url, System::Durable, &format!("{tag}-dur"), args, pid).await?;
    println!(
        "  durable    {:>9.0} msg/s  broker CPU {} per message",
        dur.rate(),
        cpu(dur.broker_cpu_us)
    );
    let ratio = eph.rate() / dur.rate().max(1e-9);
    println!(
        "  ratio      {ratio:.1}× ({} the 5× wanted)",
        if ratio >= 5.0 { "meets" } else { "misses" }
    );
    Ok(())
}

fn latency_line(where_: &str, l: &Latency, wanted_p99_ms: f64) -> String {
    format!(
        "latency push → parked consumer, {where_}: {} samples, p50 {:.2} ms p99 {:.2} ms max {:.2} ms ({} p99 ≤ {wanted_p99_ms} ms)",
        l.samples,
        l.p50_ms,
        l.p99_ms,
        l.max_ms,
        if l.p99_ms <= wanted_p99_ms { "meets" } else { "misses" }
    )
}

async fn flood_run(
    args: &EphemeralArgs,
    url: &str,
    pid: i32,
    cap: u64,
    names: impl Fn(usize) -> String,
) -> anyhow::Result<Flood> {
    flood::run(
        url,
        pid,
        cap,
        args.flood_seconds,
        args.flood_payload_bytes,
        args.flood_batch,
        names,
    )
    .await
}

fn print_flood(f: &Flood) {
    let mib = |b: u64| b as f64 / f64::from(1u32 << 20);
    println!(
        "flood {:.1} s (3 dropOldest queues + 1 reject, each maxBytes cap/2): {} messages stored ({:.0}/s), {} pushes refused (429)",
        f.seconds,
        f.stored,
        f.stored as f64 / f.seconds.max(1e-9),
        f.refused_pushes
    );
    let growth = f.peak.saturating_sub(f.before);
    println!(
        "  cap {:.1} MiB, RSS before {:.1} MiB, peak RSS {:.1} MiB: growth {:.1} MiB, {:.1} MiB beside the cap",
        mib(f.cap),
        mib(f.before),
        mib(f.peak),
        mib(growth),
        (growth as f64 - f.cap as f64) / f64::from(1u32 << 20),
    );
    println!(
        "  within the cap + the fixed overhead README states ({:.0} MiB): {}",
        mib(flood::ALLOWANCE),
        if f.within_allowance() { "yes" } else { "NO" }
    );
    println!("  broker gauges after: {}", f.gauges);
}
