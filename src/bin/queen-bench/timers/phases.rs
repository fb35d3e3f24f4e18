//! The phases of `queen-bench timers` and the lines they print.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use base64::Engine;
use serde_json::{json, Value};
use tokio::sync::Mutex;
use tokio_postgres::Client;

use super::args::TimersArgs;
use crate::cpu;
use crate::stats::Latency;

/// One run's clients and settings.
pub struct Bench {
    args: TimersArgs,
    base: String,
    http: reqwest::Client,
    admin: Option<Client>,
    postmaster: Option<i32>,
    broker: Option<i32>,
    tag: String,
}

/// CPU seconds of (PostgreSQL, broker) now.
fn cpu_now(postmaster: Option<i32>, broker: Option<i32>) -> (Option<f64>, Option<f64>) {
    (
        postmaster.and_then(cpu::tree_seconds),
        broker.and_then(cpu::process_seconds),
    )
}

fn per_timer(before: Option<f64>, after: Option<f64>, n: u64) -> String {
    match (before, after) {
        (Some(b), Some(a)) if n > 0 => format!("{:.1} µs", (a - b) * 1e6 / n as f64),
        _ => "n/a".to_owned(),
    }
}

impl Bench {
    /// Clients for `base`, a tag that keeps this run's queues apart.
    pub fn new(
        args: &TimersArgs,
        base: &str,
        admin: Option<Client>,
        postmaster: Option<i32>,
        broker: Option<i32>,
    ) -> anyhow::Result<Self> {
        Ok(Bench {
            args: args.clone(),
            base: base.trim_end_matches('/').to_owned(),
            http: reqwest::Client::builder().tcp_nodelay(true).build()?,
            admin,
            postmaster,
            broker,
            tag: format!("tb{}", std::process::id()),
        })
    }

    /// Every phase in order; the printed lines.
    pub async fn run(&self) -> anyhow::Result<Vec<String>> {
        let mut lines = Vec::new();
        let fill = self
            .schedule(
                &format!("{}-pending", self.tag),
                self.args.pending,
                86_400_000,
            )
            .await?;
        lines.push(format!(
            "fill     {} timers pending (due in a day): {:.0} timers/s",
            self.args.pending, fill.rate
        ));
        let scheduled = self
            .schedule(&format!("{}-fire", self.tag), self.args.timers, 86_400_000)
            .await?;
        lines.push(format!(
            "schedule {} timers at batch {} × {} clients, {} pending: {:.0} timers/s, call p50 {:.1} ms p99 {:.1} ms, PostgreSQL CPU {} per timer, broker CPU {} per timer",
            self.args.timers, self.args.batch, self.args.clients, self.args.pending,
            scheduled.rate, scheduled.latency.map_or(0.0, |l| l.p50_ms),
            scheduled.latency.map_or(0.0, |l| l.p99_ms), scheduled.pg_cpu, scheduled.broker_cpu
        ));
        if !self.args.no_fire {
            lines.push(self.fire().await?);
        }
        lines.push(self.lateness().await?);
        Ok(lines)
    }

    async fn post(&self, path: &str, body: &Value) -> anyhow::Result<Value> {
        loop {
            let r = self
                .http
                .post(format!("{}{path}", self.base))
                .header("content-type", "application/json")
                .body(body.to_string())
                .send()
                .await?;
            let status = r.status();
            if status == reqwest::StatusCode::TOO_MANY_REQUESTS {
                tokio::time::sleep(Duration::from_millis(10)).await;
                continue;
            }
            let body: Value = serde_json::from_slice(&r.bytes().await?).unwrap_or(Value::Null);
            if !status.is_success() {
                bail!("{path} answered {status}: {body}");
            }
            return Ok(body);
        }
    }

    fn ops(&self, queue: &str, first: u64, n: u64, delay_ms: i64) -> Value {
        let payload = base64::engine::general_purpose::STANDARD.encode(b"{\"t\":1}");
        let ops: Vec<Value> = (first..first + n)
            .map(|k| {
                json!({"op": "schedule", "queue": queue, "timerKey": format!("k/{k}"),
                       "payload": payload, "delayMs": delay_ms, "txn": format!("{queue}-{k}")})
            })
            .collect();
        json!({ "operations": ops })
    }

    /// `total` timers of `queue` due in `delay_ms`, in calls of `--batch` from `--clients`.
    async fn schedule(&self, queue: &str, total: u64, delay_ms: i64) -> anyhow::Result<Scheduled> {
        let batch = u64::from(self.args.batch);
        let next = Arc::new(Mutex::new(0u64));
        let before = cpu_now(self.postmaster, self.broker);
        let started = Instant::now();
        let mut tasks = Vec::new();
        for _ in 0..self.args.clients {
            let next = next.clone();
            let this = self.clone_light();
            let queue = queue.to_owned();
            tasks.push(tokio::spawn(async move {
                let mut micros = Vec::new();
                loop {
                    let first = {
                        let mut n = next.lock().await;
                        if *n >= total {
                            break;
                        }
                        let first = *n;
                        *n += batch.min(total - first);
                        first
                    };
                    let n = batch.min(total - first);
                    let sent = Instant::now();
                    this.post("/api/v1/timers", &this.ops(&queue, first, n, delay_ms))
                        .await?;
                    micros.push(sent.elapsed().as_micros() as u64);
                }
                anyhow::Ok(micros)
            }));
        }
        let mut micros = Vec::new();
        for t in tasks {
            micros.extend(t.await.context("a client task failed")??);
        }
        let seconds = started.elapsed().as_secs_f64();
        let after = cpu_now(self.postmaster, self.broker);
        Ok(Scheduled {
            rate: total as f64 / seconds,
            latency: Latency::from_micros(&mut micros),
            pg_cpu: per_timer(before.0, after.0, total),
            broker_cpu: per_timer(before.1, after.1, total),
        })
    }

    fn clone_light(&self) -> Bench {
        Bench {
            args: self.args.clone(),
            base: self.base.clone(),
            http: self.http.clone(),
            admin: None,
            postmaster: None,
            broker: None,
            tag: self.tag.clone(),
        }
    }

    /// Makes the fire phase's timers due at once, then times the fire loop until none of
    /// them is left.
    async fn fire(&self) -> anyhow::Result<String> {
        let Some(admin) = &self.admin else {
            return Ok("fire     skipped: no --database-url".to_owned());
        };
        let queue = format!("{}-fire", self.tag);
        // The watch below runs every 20 ms while the fire is measured, so it must cost
        // PostgreSQL nothing next to the fire: it reads the primary key (tenant, queue, key)
        // and stops at the first row. A count by queue alone would scan every pending timer.
        let left = "SELECT EXISTS (SELECT 1 FROM queen.timers \
                    WHERE tenant = ANY($2) AND queue = $1)";
        let made_due = admin
            .query(
                "UPDATE queen.timers SET deliver_at = clock_timestamp(), \
                 due_at = clock_timestamp() WHERE queue = $1 RETURNING tenant",
                &[&queue],
            )
            .await?;
        let mut tenants: Vec<String> = made_due.iter().map(|r| r.get(0)).collect();
        tenants.sort_unstable();
        tenants.dedup();
        let before = cpu_now(self.postmaster, self.broker);
        let started = Instant::now();
        loop {
            let any_left: bool = admin.query_one(left, &[&queue, &tenants]).await?.get(0);
            if !any_left {
                break;
            }
            if started.elapsed() > Duration::from_secs(600) {
                bail!("timers still pending after 10 minutes");
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let seconds = started.elapsed().as_secs_f64();
        let after = cpu_now(self.postmaster, self.broker);
        Ok(format!(
            "fire     {} timers all due, {} others pending: {:.0} fired/s, PostgreSQL CPU {} per timer, broker CPU {} per timer",
            self.args.timers, self.args.pending, self.args.timers as f64 / seconds,
            per_timer(before.0, after.0, self.args.timers),
            per_timer(before.1, after.1, self.args.timers)
        ))
    }

    /// `--rate` timers a second for `--seconds`, each due `--delay-ms` later, popped as
    /// they come; lateness = popped − deliverAt.
    async fn lateness(&self) -> anyhow::Result<String> {
        let queue = format!("{}-late", self.tag);
        let total = (self.args.rate as f64 * self.args.seconds) as u64;
        let promised: Arc<Mutex<HashMap<String, chrono::DateTime<chrono::FixedOffset>>>> =
            Arc::default();
        // Ten calls a second, each of rate/10 timers.
        let per_call = (self.args.rate / 10).max(1);
        let producer = {
            let this = self.clone_light();
            let promised = promised.clone();
            let queue = queue.clone();
            let delay = self.args.delay_ms;
            tokio::spawn(async move {
                let mut tick = tokio::time::interval(Duration::from_millis(100));
                let mut sent = 0u64;
                while sent < total {
                    tick.tick().await;
                    let n = per_call.min(total - sent);
                    let answer = this
                        .post("/api/v1/timers", &this.ops(&queue, sent, n, delay))
                        .await?;
                    let mut map = promised.lock().await;
                    for r in answer["results"].as_array().into_iter().flatten() {
                        let at = r["deliverAt"].as_str().unwrap_or_default();
                        if let Ok(at) = chrono::DateTime::parse_from_rfc3339(at) {
                            map.insert(r["txn"].as_str().unwrap_or_default().to_owned(), at);
                        }
                    }
                    sent += n;
                }
                anyhow::Ok(())
            })
        };
        let mut late_micros: Vec<u64> = Vec::new();
        let mut early = 0u64;
        let deadline = Instant::now()
            + Duration::from_secs_f64(self.args.seconds)
            + Duration::from_millis(self.args.delay_ms.max(0) as u64)
            + Duration::from_secs(10);
        let url = format!(
            "{}/api/v1/pop/queue/{queue}?batch=1000&wait=true&timeout=500&autoAck=true",
            self.base
        );
        while (late_micros.len() as u64 + early) < total && Instant::now() < deadline {
            let r = self.http.get(&url).send().await?;
            if r.status() != reqwest::StatusCode::OK {
                continue;
            }
            let seen = chrono::Utc::now();
            let body: Value = serde_json::from_slice(&r.bytes().await?)?;
            let map = promised.lock().await;
            for m in body["messages"].as_array().into_iter().flatten() {
                let txn = m["transactionId"].as_str().unwrap_or_default();
                if let Some(at) = map.get(txn) {
                    let late = seen
                        .signed_duration_since(*at)
                        .num_microseconds()
                        .unwrap_or(0);
                    if late < 0 {
                        early += 1;
                    } else {
                        late_micros.push(late as u64);
                    }
                }
            }
        }
        producer.await.context("the producer task failed")??;
        let got = late_micros.len();
        let l = Latency::from_micros(&mut late_micros);
        Ok(format!(
            "lateness {} timers/s for {} s, due {} ms after scheduling: {got}/{total} popped, {early} before deliverAt, lateness p50 {:.1} ms p99 {:.1} ms max {:.1} ms",
            self.args.rate, self.args.seconds, self.args.delay_ms,
            l.map_or(0.0, |l| l.p50_ms), l.map_or(0.0, |l| l.p99_ms), l.map_or(0.0, |l| l.max_ms)
        ))
    }
}

struct Scheduled {
    rate: f64,
    latency: Option<Latency>,
    pg_cpu: String,
    broker_cpu: String,
}
