//! `queen-bench reads`: offset reads against consuming, on the same backlog in the same run.
//!
//! Pushes a backlog of `--partitions` partitions × `--per-partition` messages (segments of
//! `--batch` messages), then reads all of it four ways, each with `--clients` concurrent
//! clients over a disjoint share of the partitions: `POST /api/v1/fetch` (one entry per
//! partition of the client's share, each entry's `maxBytes` sized for `--batch` records),
//! the same calls framed (`?frames=true`: the stored segments passed through, messages
//! counted from the record heads as the raw SELECT counts them, nothing decoded),
//! pop+ack in queue mode (`batch=--batch`, then `ack/batch`), and a raw `SELECT` of the
//! same segment rows straight from PostgreSQL (`--batch`-message segments, the blobs only,
//! nothing decoded). Prints messages per second of each and the ratios.

use std::sync::Arc;
use std::time::Instant;

use anyhow::{bail, ensure, Context};
use clap::Args;
use serde_json::{json, Value};

use crate::pg;
use crate::qpf1;
use crate::spawn::{default_binary, SpawnedBroker};

/// `reads`' options.
#[derive(Debug, Clone, Args)]
pub struct ReadsArgs {
    /// Broker base URL; without it the tool starts the broker binary on a fresh embedded
    /// PostgreSQL.
    #[arg(long, requires = "database_url")]
    pub url: Option<String>,
    /// The broker's database (for the raw SELECT), with `--url`.
    #[arg(long)]
    pub database_url: Option<String>,
    /// Partitions of the backlog.
    #[arg(long, default_value_t = 100)]
    pub partitions: usize,
    /// Messages per partition.
    #[arg(long, default_value_t = 1000)]
    pub per_partition: usize,
    /// Messages per push (one segment), per pop, and per fetch entry.
    #[arg(long, default_value_t = 100)]
    pub batch: usize,
    /// Payload size in bytes (a JSON string of that length).
    #[arg(long, default_value_t = 100)]
    pub payload_bytes: usize,
    /// Concurrent clients of each read.
    #[arg(long, default_value_t = 4)]
    pub clients: usize,
}

/// Runs the comparison and prints it.
pub async fn run(args: &ReadsArgs) -> anyhow::Result<()> {
    ensure!(
        args.partitions > 0 && args.batch > 0 && args.clients > 0,
        "sizes must be > 0"
    );
    let spawned = match &args.url {
        Some(_) => None,
        None => {
            Some(SpawnedBroker::start(&default_binary()?, &[], std::path::Path::new("/tmp")).await?)
        }
    };
    let (base, database_url) = match (&spawned, &args.url, &args.database_url) {
        (Some(s), _, _) => (s.url.clone(), s.database_url.clone()),
        (None, Some(u), Some(d)) => (u.clone(), d.clone()),
        _ => bail!("--url needs --database-url"),
    };
    let http = reqwest::Client::builder().tcp_nodelay(true).build()?;
    let queue = format!("reads-bench-{}", std::process::id());
    let total = args.partitions * args.per_partition;
    let names: Vec<String> = (0..args.partitions).map(|p| format!("p{p:04}")).collect();

    load(&http, &base, &queue, &names, args).await?;
    let fetch_s = timed(|| fetch_all(&http, &base, &queue, &names, args)).await?;
    let framed_s = timed(|| framed_fetch_all(&http, &base, &queue, &names, args)).await?;
    let pg = Arc::new(pg::connect(&pg::parse_config(&database_url)?).await?);
    let select_s = timed(|| select_all(&pg, &queue, args)).await?;
    let pop_s = timed(|| pop_ack_all(&http, &base, &queue, total, args)).await?;

    let rate = |s: f64| total as f64 / s;
    println!(
        "backlog {} partitions x {} messages ({} B payloads, {}-message segments), {} clients",
        args.partitions, args.per_partition, args.payload_bytes, args.batch, args.clients
    );
    println!(
        "fetch       {:>12.0} msg/s  ({fetch_s:.2} s)",
        rate(fetch_s)
    );
    println!(
        "framed fetch{:>12.0} msg/s  ({framed_s:.2} s)",
        rate(framed_s)
    );
    println!("pop+ack     {:>12.0} msg/s  ({pop_s:.2} s)", rate(pop_s));
    println!(
        "raw SELECT  {:>12.0} msg/s  ({select_s:.2} s)",
        rate(select_s)
    );
    println!("fetch / pop+ack    {:.2}x", pop_s / fetch_s);
    println!("fetch / raw SELECT {:.2}x", select_s / fetch_s);
    println!("framed fetch / pop+ack    {:.2}x", pop_s / framed_s);
    println!("framed fetch / raw SELECT {:.2}x", select_s / framed_s);
    // The database connection first: the broker's stop takes its PostgreSQL down.
    drop(pg);
    drop(spawned);
    Ok(())
}

/// Seconds `f` took.
async fn timed<F, Fut>(f: F) -> anyhow::Result<f64>
where
    F: FnOnce() -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<()>>,
{
    let started = Instant::now();
    f().await?;
    Ok(started.elapsed().as_secs_f64())
}

/// Pushes the backlog: one push per segment, `clients` partitions' pushes at a time.
async fn load(
    http: &reqwest::Client,
    base: &str,
    queue: &str,
    names: &[String],
    args: &ReadsArgs,
) -> anyhow::Result<()> {
    let payload = "x".repeat(args.payload_bytes);
    let shares = shares(names, args.clients);
    let mut tasks = Vec::new();
    for share in shares {
        let (http, url, queue, payload) = (
            http.clone(),
            format!("{base}/api/v1/push"),
            queue.to_owned(),
            payload.clone(),
        );
        let (per, batch) = (args.per_partition, args.batch);
        tasks.push(tokio::spawn(async move {
            for name in share {
                let mut sent = 0;
                while sent < per {
                    let n = batch.min(per - sent);
                    let items: Vec<Value> = (0..n)
                        .map(|_| json!({"queue": queue, "partition": name, "payload": payload}))
                        .collect();
                    let r = http
                        .post(&url)
                        .header("content-type", "application/json")
                        .body(serde_json::to_vec(&json!({"items": items}))?)
                        .send()
                        .await?;
                    ensure!(r.status().is_success(), "push answered {}", r.status());
                    sent += n;
                }
            }
            anyhow::Ok(())
        }));
    }
    for t in tasks {
        t.await??;
    }
    Ok(())
}

/// Reads every partition by offset to its end.
async fn fetch_all(
    http: &reqwest::Client,
    base: &str,
    queue: &str,
    names: &[String],
    args: &ReadsArgs,
) -> anyhow::Result<()> {
    // Room for `batch` records of the payload and their keys.
    let entry_bytes = (args.batch * (args.payload_bytes + 120)) as i64;
    let mut tasks = Vec::new();
    for share in shares(names, args.clients) {
        let (http, url, queue) = (
            http.clone(),
            format!("{base}/api/v1/fetch"),
            queue.to_owned(),
        );
        let want = args.per_partition as i64;
        tasks.push(tokio::spawn(async move {
            let mut next = vec![0i64; share.len()];
            let mut read = 0usize;
            while next.iter().any(|n| *n < want) {
                let entries: Vec<Value> = share
                    .iter()
                    .zip(&next)
                    .map(|(p, o)| json!({"queue": queue, "partition": p, "offset": o, "maxBytes": entry_bytes}))
                    .collect();
                let body = json!({"entries": entries, "maxBytes": 16 << 20});
                let answer = http.post(&url).header("content-type", "application/json")
                        .body(serde_json::to_vec(&body)?).send().await?.bytes().await?;
                let answer: Value = serde_json::from_slice(&answer)?;
                let got = answer["entries"].as_array().context("fetch entries")?;
                for (i, e) in got.iter().enumerate() {
                    let records = e["records"].as_array().map_or(0, Vec::len);
                    next[i] += records as i64;
                    read += records;
                }
            }
            ensure!(read == share.len() * want as usize, "fetch read {read}");
            anyhow::Ok(())
        }));
    }
    for t in tasks {
        t.await??;
    }
    Ok(())
}

/// Reads every partition by offset to its end, framed: the same calls as [`fetch_all`]
/// with `frames=true`, each claim's messages counted from its record heads.
async fn framed_fetch_all(
    http: &reqwest::Client,
    base: &str,
    queue: &str,
    names: &[String],
    args: &ReadsArgs,
) -> anyhow::Result<()> {
    let entry_bytes = (args.batch * (args.payload_bytes + 120)) as i64;
    let mut tasks = Vec::new();
    for share in shares(names, args.clients) {
        let (http, url, queue) = (
            http.clone(),
            format!("{base}/api/v1/fetch?frames=true"),
            queue.to_owned(),
        );
        let want = args.per_partition as i64;
        let index: std::collections::HashMap<String, usize> = share
            .iter()
            .enumerate()
            .map(|(i, p)| (p.clone(), i))
            .collect();
        tasks.push(tokio::spawn(async move {
            let mut next = vec![0i64; share.len()];
            let mut read = 0usize;
            while next.iter().any(|n| *n < want) {
                let entries: Vec<Value> = share
                    .iter()
                    .zip(&next)
                    .map(|(p, o)| json!({"queue": queue, "partition": p, "offset": o, "maxBytes": entry_bytes}))
                    .collect();
                let body = json!({"entries": entries, "maxBytes": 16 << 20});
                let answer = http.post(&url).header("content-type", "application/json")
                        .body(serde_json::to_vec(&body)?).send().await?.bytes().await?;
                let spans = qpf1::spans(&answer).context("framed fetch answer")?;
                ensure!(!spans.is_empty(), "a framed fetch delivered nothing");
                for span in spans {
                    let i = *index.get(&span.partition).context("a claim of no entry")?;
                    ensure!(span.start as i64 == next[i], "claim starts at {}", span.start);
                    next[i] += span.delivered as i64;
                    read += span.delivered as usize;
                }
            }
            ensure!(read == share.len() * want as usize, "framed fetch read {read}");
            anyhow::Ok(())
        }));
    }
    for t in tasks {
        t.await??;
    }
    Ok(())
}

/// Pops and acks in queue mode until `total` messages were acknowledged.
async fn pop_ack_all(
    http: &reqwest::Client,
    base: &str,
    queue: &str,
    total: usize,
    args: &ReadsArgs,
) -> anyhow::Result<()> {
    let done = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let mut tasks = Vec::new();
    for _ in 0..args.clients {
        let http = http.clone();
        let pop = format!(
            "{base}/api/v1/pop/queue/{queue}?batch={}&wait=false",
            args.batch
        );
        let ack = format!("{base}/api/v1/ack/batch");
        let done = done.clone();
        tasks.push(tokio::spawn(async move {
            while done.load(std::sync::atomic::Ordering::Relaxed) < total {
                let r = http.get(&pop).send().await?;
                if r.status().as_u16() == 204 {
                    continue;
                }
                let answer: Value = serde_json::from_slice(&r.bytes().await?)?;
                let messages = answer["messages"].as_array().cloned().unwrap_or_default();
                let acks: Vec<Value> = messages
                    .iter()
                    .map(|m| {
                        json!({"transactionId": m["transactionId"], "partitionId": m["partitionId"],
                                    "leaseId": m["leaseId"], "status": "completed"})
                    })
                    .collect();
                let r = http
                    .post(&ack)
                    .header("content-type", "application/json")
                    .body(serde_json::to_vec(&json!({"acknowledgments": acks}))?)
                    .send()
                    .await?;
                ensure!(r.status().is_success(), "ack answered {}", r.status());
                done.fetch_add(messages.len(), std::sync::atomic::Ordering::Relaxed);
            }
            anyhow::Ok(())
        }));
    }
    for t in tasks {
        t.await??;
    }
    Ok(())
}

/// Selects every segment row of the queue (blobs not decoded), 100 rows a query: each
/// client walks its share of the partitions.
async fn select_all(
    pg: &Arc<tokio_postgres::Client>,
    queue: &str,
    args: &ReadsArgs,
) -> anyhow::Result<()> {
    let ids: Vec<i64> = pg
        .query(
            "SELECT p.id FROM queen.log_partitions p JOIN queen.queues q ON q.id = p.queue_id
             WHERE q.name = $1 ORDER BY p.id",
            &[&queue],
        )
        .await?
        .iter()
        .map(|r| r.get(0))
        .collect();
    let statement = pg
        .prepare(
            "SELECT base_offset, msg_count, blob FROM queen.log_segments
             WHERE partition_id = $1 AND base_offset >= $2 ORDER BY base_offset LIMIT 100",
        )
        .await?;
    let mut tasks = Vec::new();
    for share in shares(&ids, args.clients) {
        let (pg, statement) = (pg.clone(), statement.clone());
        tasks.push(tokio::spawn(async move {
            for id in share {
                let mut from = 0i64;
                loop {
                    let rows = pg.query(&statement, &[&id, &from]).await?;
                    let Some(last) = rows.last() else { break };
                    let (base, count): (i64, i32) = (last.get(0), last.get(1));
                    from = base + i64::from(count);
                }
            }
            anyhow::Ok(())
        }));
    }
    for t in tasks {
        t.await??;
    }
    Ok(())
}

/// `items` dealt round-robin into `n` shares.
fn shares<T: Clone>(items: &[T], n: usize) -> Vec<Vec<T>> {
    let mut out = vec![Vec::new(); n.min(items.len()).max(1)];
    let len = out.len();
    for (i, item) in items.iter().enumerate() {
        out[i % len].push(item.clone());
    }
    out
}
