//! What the benchmarks share: a private PostgreSQL, an in-process broker, and the HTTP load
//! loops (push spread over partitions; pop + batch ack until drained).

#![allow(dead_code)]

use std::net::TcpListener;
use std::os::unix::fs::PermissionsExt;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

use queen::app::{self, App};
use queen::config::{Config, DatabaseSource, ExternalSettings};
use queen::db::embedded::{EmbeddedOptions, EmbeddedPostgres};
use serde_json::{json, Value};

/// A private PostgreSQL in a temporary folder (kept alive by the returned guard).
pub fn start_postgres(port: u16) -> anyhow::Result<(EmbeddedPostgres, tempfile::TempDir)> {
    let dir = tempfile::Builder::new()
        .prefix("queen-bench-")
        .tempdir_in("/tmp")?;
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755))?;
    let pg = EmbeddedPostgres::start(EmbeddedOptions {
        data_dir: dir.path().join("data"),
        port,
        user: "queen".to_owned(),
        bin_dir: None,
        server_settings: vec![
            ("max_connections".to_owned(), "200".to_owned()),
            ("shared_buffers".to_owned(), "256MB".to_owned()),
        ],
    })?;
    Ok((pg, dir))
}

/// A database of its own on the private cluster.
pub async fn fresh_database(
    pg: &EmbeddedPostgres,
    name: &str,
) -> anyhow::Result<tokio_postgres::Config> {
    let admin = connect(&pg.pg_config("postgres")).await?;
    // Two statements: DROP/CREATE DATABASE cannot share an implicit transaction.
    admin
        .batch_execute(&format!("DROP DATABASE IF EXISTS \"{name}\""))
        .await?;
    admin
        .batch_execute(&format!("CREATE DATABASE \"{name}\""))
        .await?;
    Ok(pg.pg_config(name))
}

/// A broker in-process on a loopback port, with extra settings.
pub async fn start_broker(
    pg: tokio_postgres::Config,
    vars: &[(&str, &str)],
) -> anyhow::Result<(App, String)> {
    let mut settings: Vec<(&str, &str)> = vec![("DB_POOL_SIZE", "32")];
    settings.extend_from_slice(vars);
    let mut config = Config::from_vars(settings)?;
    config.database.source = DatabaseSource::External(ExternalSettings::Given(Box::new(pg)));
    config.http.workers = 2;
    config.mesh.bind.set_port(0);
    // Several brokers run in one bench process and a spool folder takes one broker: the
    // benches measure the database path, whose only spool cost is two atomic loads.
    config.spool.max_bytes = 0;
    let app = app::start(config, TcpListener::bind("127.0.0.1:0")?).await?;
    let base = format!("http://{}", app.http_addr());
    Ok((app, base))
}

/// A plain tokio-postgres client.
pub async fn connect(config: &tokio_postgres::Config) -> anyhow::Result<tokio_postgres::Client> {
    let (client, connection) = config.connect(tokio_postgres::NoTls).await?;
    tokio::spawn(connection);
    Ok(client)
}

/// A small order-like JSON payload (~60 bytes).
pub fn payload(i: usize) -> Value {
    json!({"order": i, "customer": "c-1234", "amount": 42.5, "currency": "EUR"})
}

/// An HTTP client that keeps enough connections for the load.
pub fn http() -> reqwest::Client {
    reqwest::Client::builder()
        .pool_max_idle_per_host(256)
        .build()
        .expect("http client")
}

/// Pushes `total` messages with `concurrency` producers, `batch` items per request; request
/// k goes to partition k mod `partitions`. Returns msg/s.
pub async fn push(
    http: &reqwest::Client,
    base: &str,
    queue: &str,
    total: usize,
    batch: usize,
    partitions: usize,
    concurrency: usize,
) -> anyhow::Result<f64> {
    let next = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..concurrency {
        let (http, next, url, queue) = (
            http.clone(),
            next.clone(),
            format!("{base}/api/v1/push"),
            queue.to_owned(),
        );
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
    Ok(total as f64 / started.elapsed().as_secs_f64())
}

/// Acks `messages` completed in one batch; returns how many the broker refused.
pub async fn ack(http: &reqwest::Client, base: &str, messages: &[Value]) -> anyhow::Result<usize> {
    let acks: Vec<Value> = messages
        .iter()
        .map(|m| {
            json!({"transactionId": m["transactionId"], "partitionId": m["partitionId"],
                   "leaseId": m["leaseId"], "status": "completed"})
        })
        .collect();
    let response = http
        .post(format!("{base}/api/v1/ack/batch"))
        .json(&json!({"acknowledgments": acks}))
        .send()
        .await?;
    anyhow::ensure!(
        response.status().is_success(),
        "ack answered {}",
        response.status()
    );
    let answer: Value = response.json().await?;
    let applied = answer.as_array().map_or(0, |items| {
        items
            .iter()
            .filter(|i| i["success"] == true && i["error"].is_null())
            .count()
    });
    Ok(messages.len().saturating_sub(applied))
}

/// Pops (`query` appended to the pop URL) and batch-acks with `concurrency` consumers until
/// `total` messages were acked. Returns msg/s.
pub async fn pop_ack(
    http: &reqwest::Client,
    base: &str,
    queue: &str,
    query: &str,
    total: usize,
    concurrency: usize,
) -> anyhow::Result<f64> {
    let done = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..concurrency {
        let (http, done, base) = (http.clone(), done.clone(), base.to_owned());
        let pop = format!("{base}/api/v1/pop/queue/{queue}?{query}");
        tasks.push(tokio::spawn(async move {
            while done.load(Ordering::SeqCst) < total {
                let response = http.get(&pop).send().await?;
                if response.status().as_u16() == 204 {
                    continue;
                }
                anyhow::ensure!(
                    response.status().is_success(),
                    "pop failed: {}",
                    response.status()
                );
                let body: Value = response.json().await?;
                let messages = body["messages"].as_array().cloned().unwrap_or_default();
                // Refused items are not retried here; the drain counts deliveries.
                ack(&http, &base, &messages).await?;
                done.fetch_add(messages.len(), Ordering::SeqCst);
            }
            anyhow::Ok(())
        }));
    }
    for t in tasks {
        t.await??;
    }
    Ok(total as f64 / started.elapsed().as_secs_f64())
}

/// The `q`-quantile (0..=1) of sorted values, nearest rank.
pub fn quantile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}
