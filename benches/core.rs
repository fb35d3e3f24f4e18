//! One-node throughput of the log core, side by side with a row-per-message baseline on
//! the same PostgreSQL in the same run (these machines are shared and noisy: read ratios).
//!
//! Run: `cargo bench --bench core` (env: QUEEN_BENCH_MESSAGES, default 20000;
//! QUEEN_BENCH_CONCURRENCY, default 8; QUEEN_BENCH_PARTITIONS, default 16).
//!
//! For each batch size (10 and 100) it prints push msg/s and pop+ack msg/s for the broker
//! (HTTP + JSON, one segment per push, leased pops acked with one batch ack) and for the
//! baseline (one row per message; enqueue = multi-row INSERT; dequeue = UPDATE ... FOR
//! UPDATE SKIP LOCKED with a visibility timeout; ack = DELETE), all with the same
//! concurrency against the same server.

mod support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

use serde_json::Value;
use support::{connect, payload};

struct Settings {
    messages: usize,
    concurrency: usize,
    partitions: usize,
}

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn main() -> anyhow::Result<()> {
    let settings = Settings {
        messages: env_usize("QUEEN_BENCH_MESSAGES", 20_000),
        concurrency: env_usize("QUEEN_BENCH_CONCURRENCY", 8),
        partitions: env_usize("QUEEN_BENCH_PARTITIONS", 16),
    };
    let (mut pg, _dir) = support::start_postgres(5499)?;
    let result = actix_rt::System::new().block_on(run(&settings, &pg));
    pg.stop()?;
    result
}

async fn run(s: &Settings, pg: &queen::db::embedded::EmbeddedPostgres) -> anyhow::Result<()> {
    let pg_config = support::fresh_database(pg, "bench_core").await?;
    let (broker, base) = support::start_broker(pg_config.clone(), &[("RUST_LOG", "warn")]).await?;
    let http = support::http();

    println!(
        "queen core bench: {} messages, {} concurrent clients, {} partitions, payload ~60 B, one node",
        s.messages, s.concurrency, s.partitions
    );
    println!("PostgreSQL, broker and this load generator share the machine's cores.\n");
    println!(
        "{:<28} {:>14} {:>14} {:>8}",
        "scenario", "queen msg/s", "baseline msg/s", "ratio"
    );
    for batch in [10usize, 100] {
        let queue = format!("bench-b{batch}");
        let push = support::push(
            &http,
            &base,
            &queue,
            s.messages,
            batch,
            s.partitions,
            s.concurrency,
        )
        .await?;
        let pop = support::pop_ack(
            &http,
            &base,
            &queue,
            &format!("batch={batch}&wait=true&timeout=200"),
            s.messages,
            s.concurrency,
        )
        .await?;
        let base_push = baseline_push(&pg_config, s, batch).await?;
        let base_pop = baseline_pop_ack(&pg_config, s, batch).await?;
        println!(
            "{:<28} {:>14.0} {:>14.0} {:>7.2}x",
            format!("push, batch {batch}"),
            push,
            base_push,
            push / base_push
        );
        println!(
            "{:<28} {:>14.0} {:>14.0} {:>7.2}x",
            format!("pop+ack, batch {batch}"),
            pop,
            base_pop,
            pop / base_pop
        );
    }
    broker.stop().await;
    Ok(())
}

async fn baseline_push(
    config: &tokio_postgres::Config,
    s: &Settings,
    batch: usize,
) -> anyhow::Result<f64> {
    let admin = connect(config).await?;
    admin
        .batch_execute(
            "DROP TABLE IF EXISTS bench_baseline;
             CREATE TABLE bench_baseline (
                 id bigserial PRIMARY KEY, queue text NOT NULL, partition text NOT NULL,
                 payload jsonb NOT NULL, visible_at timestamptz NOT NULL DEFAULT now());
             CREATE INDEX ON bench_baseline (queue, visible_at, id);",
        )
        .await?;
    let next = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..s.concurrency {
        let client = connect(config).await?;
        let (next, total, partitions) = (next.clone(), s.messages, s.partitions);
        tasks.push(tokio::spawn(async move {
            let insert = client
                .prepare(
                    "INSERT INTO bench_baseline (queue, partition, payload)
                     SELECT 'q', $1, p FROM unnest($2::jsonb[]) AS p",
                )
                .await?;
            loop {
                let start = next.fetch_add(batch, Ordering::SeqCst);
                if start >= total {
                    return anyhow::Ok(());
                }
                let partition = format!("p{}", (start / batch) % partitions);
                let rows: Vec<Value> = (start..(start + batch).min(total)).map(payload).collect();
                client.execute(&insert, &[&partition, &rows]).await?;
            }
        }));
    }
    for t in tasks {
        t.await??;
    }
    Ok(s.messages as f64 / started.elapsed().as_secs_f64())
}

async fn baseline_pop_ack(
    config: &tokio_postgres::Config,
    s: &Settings,
    batch: usize,
) -> anyhow::Result<f64> {
    let done = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..s.concurrency {
        let client = connect(config).await?;
        let (done, total) = (done.clone(), s.messages);
        tasks.push(tokio::spawn(async move {
            let claim = client
                .prepare(
                    "UPDATE bench_baseline SET visible_at = now() + interval '30 seconds'
                     WHERE id IN (SELECT id FROM bench_baseline
                                  WHERE queue = 'q' AND visible_at <= now()
                                  ORDER BY id LIMIT $1 FOR UPDATE SKIP LOCKED)
                     RETURNING id, payload",
                )
                .await?;
            let delete = client
                .prepare("DELETE FROM bench_baseline WHERE id = ANY($1)")
                .await?;
            while done.load(Ordering::SeqCst) < total {
                let rows = client.query(&claim, &[&(batch as i64)]).await?;
                if rows.is_empty() {
                    tokio::task::yield_now().await;
                    continue;
                }
                let ids: Vec<i64> = rows.iter().map(|r| r.get(0)).collect();
                client.execute(&delete, &[&ids]).await?;
                done.fetch_add(ids.len(), Ordering::SeqCst);
            }
            anyhow::Ok(())
        }));
    }
    for t in tasks {
        t.await??;
    }
    Ok(s.messages as f64 / started.elapsed().as_secs_f64())
}
