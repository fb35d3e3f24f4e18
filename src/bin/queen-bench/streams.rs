//! `queen-bench streams`: a streams cycle (`POST /streams/v1/cycle`: one batch's sink
//! pushes and its ack in one transaction) against plain pop + push + ack of the same
//! messages, in the same run, one client each.
//!
//! `--partitions` partitions of `--batch` messages each. Each side first pops every
//! partition (one leased batch each, its own consumer group), then settles them one by
//! one: the streams side with one cycle per batch (every message pushed to a sink and the
//! batch acked), the plain side with one push of the batch to another sink and one ack of
//! it. Printed per side: messages per second over pops and settling, PostgreSQL
//! transactions committed per settled batch (`pg_stat_database.xact_commit` around the
//! settling only, so pops do not count; the broker's background work may add a little),
//! and PostgreSQL CPU (the postmaster's process tree) per message.

use std::time::{Duration, Instant};

use anyhow::{ensure, Context};
use serde_json::{json, Value};
use tokio_postgres::Client;

use crate::spawn::SpawnedBroker;
use crate::{cpu, pg};

mod args;

pub use args::StreamsArgs;

/// What one side measured.
struct Side {
    name: &'static str,
    messages: u64,
    elapsed: Duration,
    commits_per_batch: f64,
    writes_per_batch: f64,
    pg_cpu_us_per_message: Option<f64>,
}

/// Runs both sides and prints them.
pub async fn main(args: StreamsArgs) -> anyhow::Result<()> {
    let (base, database_url, _spawned) = server(&args).await?;
    let admin = pg::connect(&pg::parse_config(&database_url)?).await?;
    let postmaster = pg::postmaster_pid(&admin).await?;
    let http = reqwest::Client::builder().tcp_nodelay(true).build()?;
    let run = format!("{:x}", std::process::id());
    let source = format!("bench-streams-{run}");
    fill(&http, &base, &source, &args).await?;
    let registered = post(
        &http,
        &format!("{base}/streams/v1/queries"),
        &json!({"name": format!("bench-{run}"), "source_queue": source,
                "sink_queue": format!("{source}-sink"), "config_hash": "bench"}),
    )
    .await?;
    let query = registered["query_id"]
        .as_str()
        .context("the registration answered no query_id")?
        .to_owned();
    let ctx = Ctx {
        http,
        base,
        source,
        admin,
        postmaster,
        batch: args.batch,
        partitions: args.partitions,
    };
    let streams = ctx.side("streams cycle", Some(&query)).await?;
    let plain = ctx.side("pop+push+ack", None).await?;
    println!(
        "{:<16} {:>10} {:>12} {:>22} {:>22} {:>20}",
        "side",
        "messages",
        "messages/s",
        "PG commits per batch",
        "PG write xacts/batch",
        "PG CPU µs/message"
    );
    for s in [&streams, &plain] {
        println!(
            "{:<16} {:>10} {:>12.0} {:>22.2} {:>22.2} {:>20}",
            s.name,
            s.messages,
            s.messages as f64 / s.elapsed.as_secs_f64(),
            s.commits_per_batch,
            s.writes_per_batch,
            s.pg_cpu_us_per_message
                .map_or("n/a".to_owned(), |c| format!("{c:.1}"))
        );
    }
    Ok(())
}

async fn server(args: &StreamsArgs) -> anyhow::Result<(String, String, Option<SpawnedBroker>)> {
    match (&args.url, &args.database_url) {
        (Some(u), Some(d)) => Ok((u.trim_end_matches('/').to_owned(), d.clone(), None)),
        _ => {
            let s = args.launch.start(&[]).await?;
            Ok((s.url.clone(), s.database_url.clone(), Some(s)))
        }
    }
}

/// Pushes `--batch` messages into each partition of the source.
async fn fill(
    http: &reqwest::Client,
    base: &str,
    source: &str,
    args: &StreamsArgs,
) -> anyhow::Result<()> {
    for p in 0..args.partitions {
        let items: Vec<Value> = (0..args.batch)
            .map(|i| {
                json!({"queue": source, "partition": format!("p{p}"),
                            "payload": {"p": p, "i": i, "note": "queen-bench streams"}})
            })
            .collect();
        post(
            http,
            &format!("{base}/api/v1/push"),
            &json!({"items": items}),
        )
        .await?;
    }
    Ok(())
}

struct Ctx {
    http: reqwest::Client,
    base: String,
    source: String,
    admin: Client,
    postmaster: Option<i32>,
    batch: u32,
    partitions: u32,
}

impl Ctx {
    /// One side: pop every partition's batch, then settle each (a cycle when `query` is
    /// given, else a push and an ack).
    async fn side(&self, name: &'static str, query: Option<&str>) -> anyhow::Result<Side> {
        let group = if query.is_some() {
            "streams.bench"
        } else {
            "plain.bench"
        };
        let cpu_before = self.postmaster.and_then(cpu::tree_seconds);
        let started = Instant::now();
        let mut batches = Vec::new();
        for _ in 0..self.partitions {
            let url = format!(
                "{}/api/v1/pop/queue/{}?consumerGroup={group}&batch={}&leaseSeconds=600",
                self.base, self.source, self.batch
            );
            let r = self.http.get(&url).send().await.context("pop")?;
            ensure!(r.status().is_success(), "pop answered {}", r.status());
            let bytes = r.bytes().await?;
            let body: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
            let messages = body["messages"].as_array().cloned().unwrap_or_default();
            ensure!(
                messages.len() == self.batch as usize,
                "a pop gave {} messages, not one batch",
                messages.len()
            );
            batches.push(messages);
        }
        let popped = started.elapsed();
        let cpu_popped = self.postmaster.and_then(cpu::tree_seconds);
        let commits_before = self.commits().await?;
        let cpu_settling = self.postmaster.and_then(cpu::tree_seconds);
        let settling = Instant::now();
        for batch in &batches {
            match query {
                Some(q) => self.cycle(q, group, batch).await?,
                None => self.push_and_ack(group, batch).await?,
            }
        }
        let settled = settling.elapsed();
        let cpu_after = self.postmaster.and_then(cpu::tree_seconds);
        let commits_after = self.commits().await?;
        // Our own reads of the counters commit one transaction each.
        let commits = commits_after.0 - commits_before.0 - 1;
        let writes = commits_after.1 - commits_before.1;
        // CPU is read before the counters' wait, so idle time is not charged.
        let messages = u64::from(self.partitions) * u64::from(self.batch);
        Ok(Side {
            name,
            messages,
            elapsed: popped + settled,
            commits_per_batch: commits as f64 / f64::from(self.partitions),
            writes_per_batch: writes as f64 / f64::from(self.partitions),
            // Pops and settling, not the wait for the counters between them.
            pg_cpu_us_per_message: match (cpu_before, cpu_popped, cpu_settling, cpu_after) {
                (Some(a), Some(b), Some(c), Some(d)) => {
                    Some(((b - a) + (d - c)) * 1e6 / messages as f64)
                }
                _ => None,
            },
        })
    }

    /// Transactions committed in the broker's database (`pg_stat_database.xact_commit`,
    /// read once every backend flushed its counters: an idle backend does within
    /// PostgreSQL's 10 s idle interval), and the next transaction id (write transactions
    /// of the whole server, counted without that wait).
    async fn commits(&self) -> anyhow::Result<(i64, i64)> {
        tokio::time::sleep(Duration::from_millis(11_000)).await;
        self.admin
            .batch_execute("SELECT pg_stat_clear_snapshot()")
            .await?;
        let row = self
            .admin
            .query_one(
                "SELECT xact_commit,
                        pg_snapshot_xmax(pg_current_snapshot())::text::bigint
                 FROM pg_stat_database WHERE datname = current_database()",
                &[],
            )
            .await?;
        Ok((row.get(0), row.get(1)))
    }

    async fn cycle(&self, query: &str, group: &str, batch: &[Value]) -> anyhow::Result<()> {
        let last = &batch[batch.len() - 1];
        let pushes: Vec<Value> = batch
            .iter()
            .map(|m| {
                json!({"queue": format!("{}-sink", self.source),
                            "partition": m["partition"], "payload": m["data"]})
            })
            .collect();
        let answer = post(
            &self.http,
            &format!("{}/streams/v1/cycle", self.base),
            &json!({"query_id": query, "partition_id": batch[0]["partitionId"],
                    "consumer_group": group, "state_ops": [], "push_items": pushes,
                    "ack": {"transactionId": last["transactionId"], "leaseId": last["leaseId"],
                            "status": "completed", "count": batch.len()},
                    "release_lease": true}),
        )
        .await?;
        ensure!(answer["success"] == true, "a cycle failed: {answer}");
        Ok(())
    }

    async fn push_and_ack(&self, group: &str, batch: &[Value]) -> anyhow::Result<()> {
        let items: Vec<Value> = batch
            .iter()
            .map(|m| {
                json!({"queue": format!("{}-plain", self.source),
                            "partition": m["partition"], "payload": m["data"]})
            })
            .collect();
        post(
            &self.http,
            &format!("{}/api/v1/push", self.base),
            &json!({"items": items}),
        )
        .await?;
        let acks: Vec<Value> = batch
            .iter()
            .map(|m| {
                json!({"transactionId": m["transactionId"], "partitionId": m["partitionId"],
                            "leaseId": m["leaseId"], "status": "completed"})
            })
            .collect();
        let answer = post(
            &self.http,
            &format!("{}/api/v1/ack/batch", self.base),
            &json!({"acknowledgments": acks, "consumerGroup": group}),
        )
        .await?;
        let ok = answer
            .as_array()
            .or_else(|| answer["results"].as_array())
            .is_some_and(|r| r.iter().all(|v| v["success"] == true));
        ensure!(ok, "an ack failed: {answer}");
        Ok(())
    }
}

async fn post(http: &reqwest::Client, url: &str, body: &Value) -> anyhow::Result<Value> {
    let r = http
        .post(url)
        .header("content-type", "application/json")
        .body(serde_json::to_vec(body)?)
        .send()
        .await
        .with_context(|| format!("POST {url}"))?;
    let status = r.status();
    let bytes = r.bytes().await?;
    let value: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    ensure!(status.is_success(), "POST {url} answered {status}: {value}");
    Ok(value)
}
