//! The two pop paths side by side in one run: the hot-list (group actors' rings, the
//! default) and the legacy SQL candidate scan (`QUEEN_HOTLIST=0`).
//!
//! Run: `cargo bench --bench pop_paths` (env: QUEEN_BENCH_CONCURRENCY, default 8;
//! QUEEN_BENCH_WAKE_TRIALS, default 200).
//!
//! Prints pop+ack msg/s with 1, 100 and 10,000 partitions (batch 100, up to 8 partitions
//! per pop, 8 consumers), and the wake latency of a parked consumer (push sent → pop
//! answered) p50/p99. PostgreSQL, broker and load generator share the machine's cores.

mod support;

use std::time::{Duration, Instant};

use serde_json::json;

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn main() -> anyhow::Result<()> {
    let (mut pg, _dir) = support::start_postgres(5498)?;
    let result = actix_rt::System::new().block_on(run(&pg));
    pg.stop()?;
    result
}

struct Row {
    path: &'static str,
    rates: Vec<f64>,
    wake_p50_ms: f64,
    wake_p99_ms: f64,
}

async fn run(pg: &queen::db::embedded::EmbeddedPostgres) -> anyhow::Result<()> {
    let concurrency = env_usize("QUEEN_BENCH_CONCURRENCY", 8);
    let trials = env_usize("QUEEN_BENCH_WAKE_TRIALS", 200);
    let partition_counts = [1usize, 100, 10_000];
    let http = support::http();
    let mut rows = Vec::new();
    for (path, hotlist) in [("hot-list", "1"), ("legacy scan", "0")] {
        let db = support::fresh_database(pg, &format!("bench_paths_{hotlist}")).await?;
        let (broker, base) =
            support::start_broker(db, &[("QUEEN_HOTLIST", hotlist), ("RUST_LOG", "warn")]).await?;
        let mut rates = Vec::new();
        for &partitions in &partition_counts {
            let queue = format!("paths-{partitions}");
            // Enough messages that every partition holds a few, and at least 20,000.
            let total = (partitions * 4).max(20_000);
            let per_request = if partitions >= 100 {
                100
            } else {
                100.min(total)
            };
            support::push(
                &http,
                &base,
                &queue,
                total,
                per_request,
                partitions,
                concurrency,
            )
            .await?;
            let rate = support::pop_ack(
                &http,
                &base,
                &queue,
                "batch=100&partitions=8&wait=true&timeout=200",
                total,
                concurrency,
            )
            .await?;
            rates.push(rate);
        }
        let mut wakes = wake_latencies(&http, &base, trials).await?;
        wakes.sort_by(f64::total_cmp);
        rows.push(Row {
            path,
            rates,
            wake_p50_ms: support::quantile(&wakes, 0.50),
            wake_p99_ms: support::quantile(&wakes, 0.99),
        });
        broker.stop().await;
    }

    println!("queen pop paths: batch 100, partitions=8 per pop, {concurrency} consumers, one node");
    println!("PostgreSQL, broker and this load generator share the machine's cores.\n");
    println!(
        "{:<12} {:>16} {:>16} {:>18} {:>12} {:>12}",
        "path", "1 partition", "100 partitions", "10,000 partitions", "wake p50", "wake p99"
    );
    for r in &rows {
        println!(
            "{:<12} {:>12.0} m/s {:>12.0} m/s {:>14.0} m/s {:>9.1} ms {:>9.1} ms",
            r.path, r.rates[0], r.rates[1], r.rates[2], r.wake_p50_ms, r.wake_p99_ms
        );
    }
    if rows.len() == 2 {
        let ratio: Vec<String> = (0..3)
            .map(|i| format!("{:.2}x", rows[0].rates[i] / rows[1].rates[i]))
            .collect();
        println!(
            "{:<12} {:>16} {:>16} {:>18}",
            "hot/legacy", ratio[0], ratio[1], ratio[2]
        );
    }
    Ok(())
}

/// Push-to-delivery latency of one parked consumer, `trials` times.
async fn wake_latencies(
    http: &reqwest::Client,
    base: &str,
    trials: usize,
) -> anyhow::Result<Vec<f64>> {
    let queue = "wake";
    let pop_url =
        format!("{base}/api/v1/pop/queue/{queue}?batch=10&wait=true&timeout=10000&autoAck=true");
    // First contact (the group's seed) before measuring.
    http.get(format!("{base}/api/v1/pop/queue/{queue}?autoAck=true"))
        .send()
        .await?;
    let mut out = Vec::with_capacity(trials);
    for i in 0..trials {
        let waiter = tokio::spawn({
            let (http, url) = (http.clone(), pop_url.clone());
            async move {
                let response = http.get(url).send().await?;
                anyhow::Ok((Instant::now(), response.status().as_u16()))
            }
        });
        // Let the consumer park: the broker answers nothing for a while.
        tokio::time::sleep(Duration::from_millis(30)).await;
        let sent = Instant::now();
        let pushed = http
            .post(format!("{base}/api/v1/push"))
            .json(&json!({"items": [{"queue": queue, "partition": format!("w{}", i % 4), "payload": {"i": i}}]}))
            .send()
            .await?;
        anyhow::ensure!(pushed.status().is_success(), "push failed");
        let (answered, status) = waiter.await??;
        anyhow::ensure!(status == 200, "the parked pop answered {status}");
        out.push(answered.saturating_duration_since(sent).as_secs_f64() * 1000.0);
    }
    Ok(out)
}
