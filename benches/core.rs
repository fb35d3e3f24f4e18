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

use std::net::TcpListener;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

use queen::app;
use queen::config::{Config, DatabaseSource, ExternalSettings};
use queen::db::embedded::{EmbeddedOptions, EmbeddedPostgres};
use serde_json::{json, Value};

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
    let dir = tempfile::Builder::new()
        .prefix("queen-bench-")
        .tempdir_in("/tmp")?;
    std::fs::set_permissions(
        dir.path(),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )?;
    let mut pg = EmbeddedPostgres::start(EmbeddedOptions {
        data_dir: dir.path().join("data"),
        port: 5499,
        user: "queen".to_owned(),
        bin_dir: None,
        server_settings: vec![
            ("max_connections".to_owned(), "200".to_owned()),
            ("shared_buffers".to_owned(), "256MB".to_owned()),
        ],
    })?;
    let pg_config = pg.pg_config("postgres");
    let result = actix_rt::System::new().block_on(run(&settings, pg_config));
    pg.stop()?;
    result
}

async fn run(s: &Settings, pg_config: tokio_postgres::Config) -> anyhow::Result<()> {
    let mut config = Config::from_vars([("DB_POOL_SIZE", "32"), ("RUST_LOG", "warn")])?;
    config.database.source =
        DatabaseSource::External(ExternalSettings::Given(Box::new(pg_config.clone())));
    config.http.workers = 2;
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let broker = app::start(config, listener).await?;
    let base = format!("http://{}", broker.http_addr());
    let http = reqwest::Client::builder()
        .pool_max_idle_per_host(64)
        .build()?;

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
        let push = broker_push(&http, &base, &queue, s, batch).await?;
        let pop = broker_pop_ack(&http, &base, &queue, s, batch).await?;
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

fn payload(i: usize) -> Value {
    json!({"order": i, "customer": "c-1234", "amount": 42.5, "currency": "EUR"})
}

async fn broker_push(
    http: &reqwest::Client,
    base: &str,
    queue: &str,
    s: &Settings,
    batch: usize,
) -> anyhow::Result<f64> {
    let next = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..s.concurrency {
        let (http, next, url) = (http.clone(), next.clone(), format!("{base}/api/v1/push"));
        let (queue, total, partitions) = (queue.to_owned(), s.messages, s.partitions);
        tasks.push(tokio::spawn(async move {
            loop {
                let start = next.fetch_add(batch, Ordering::SeqCst);
                if start >= total {
                    return anyhow::Ok(());
                }
                let partition = format!("p{}", (start / batch) % partitions);
                let items: Vec<Value> = (start..(start + batch).min(total))
                    .map(|i| json!({"queue": queue, "partition": partition, "payload": payload(i)}))
                    .collect();
                let response = http
                    .post(&url)
                    .json(&json!({"items": items}))
                    .send()
                    .await?;
                anyhow::ensure!(
                    response.status().is_success(),
                    "push failed: {}",
                    response.status()
                );
            }
        }));
    }
    for t in tasks {
        t.await??;
    }
    Ok(s.messages as f64 / started.elapsed().as_secs_f64())
}

async fn broker_pop_ack(
    http: &reqwest::Client,
    base: &str,
    queue: &str,
    s: &Settings,
    batch: usize,
) -> anyhow::Result<f64> {
    let done = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..s.concurrency {
        let (http, done, base) = (http.clone(), done.clone(), base.to_owned());
        let (queue, total) = (queue.to_owned(), s.messages);
        tasks.push(tokio::spawn(async move {
            let pop =
                format!("{base}/api/v1/pop/queue/{queue}?batch={batch}&wait=true&timeout=200");
            while done.load(Ordering::SeqCst) < total {
                let response = http.get(&pop).send().await?;
                if response.status().as_u16() == 204 {
                    continue;
                }
                let body: Value = response.json().await?;
                let messages = body["messages"].as_array().cloned().unwrap_or_default();
                let acks: Vec<Value> = messages
                    .iter()
                    .map(|m| {
                        json!({"transactionId": m["transactionId"], "partitionId": m["partitionId"],
                                    "leaseId": m["leaseId"], "status": "completed"})
                    })
                    .collect();
                let ack = http
                    .post(format!("{base}/api/v1/ack/batch"))
                    .json(&json!({"acknowledgments": acks}))
                    .send()
                    .await?;
                anyhow::ensure!(ack.status().is_success(), "ack failed");
                done.fetch_add(messages.len(), Ordering::SeqCst);
            }
            anyhow::Ok(())
        }));
    }
    for t in tasks {
        t.await??;
    }
    Ok(s.messages as f64 / started.elapsed().as_secs_f64())
}

async fn connect(config: &tokio_postgres::Config) -> anyhow::Result<tokio_postgres::Client> {
    let (client, connection) = config.connect(tokio_postgres::NoTls).await?;
    tokio::spawn(connection);
    Ok(client)
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
