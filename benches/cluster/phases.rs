//! The three measured phases: push, pop+ack (with the exactly-once tally) and the wake of a
//! parked consumer. Which node each client talks to is decided by the caller's `bases`.

use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::wire::{configure, metrics, pop};
use super::Settings;
use crate::support;
use crate::support::ack;

/// A drain in which no consumer receives a new message for this long has lost messages:
/// with pops parked for 2 s, a live queue hands something out well within it.
const STALL: Duration = Duration::from_secs(15);
/// The pop every consumer of the drain sends.
const DRAIN_POP: &str = "batch=100&wait=true&timeout=2000";
/// Pushes `s.messages` in requests of 100, producer i on node i mod n; request k goes to
/// partition k mod `s.partitions`. Returns msg/s and the items not answered `queued`.
pub(crate) async fn push_phase(
    s: &Settings,
    http: &reqwest::Client,
    bases: &[String],
    queue: &str,
) -> anyhow::Result<(f64, usize)> {
    const BATCH: usize = 100;
    let next = Arc::new(AtomicUsize::new(0));
    let refused = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let mut tasks = Vec::new();
    for p in 0..s.producers {
        let url = format!("{}/api/v1/push", bases[p % bases.len()]);
        let (http, next, refused) = (http.clone(), next.clone(), refused.clone());
        let (queue, total, partitions) = (queue.to_owned(), s.messages, s.partitions);
        tasks.push(tokio::spawn(async move {
            loop {
                let start = next.fetch_add(BATCH, Ordering::SeqCst);
                if start >= total {
                    return anyhow::Ok(());
                }
                let partition = format!("p{}", (start / BATCH) % partitions);
                let items: Vec<Value> = (start..(start + BATCH).min(total))
                    .map(|i| json!({"queue": queue, "partition": partition, "payload": support::payload(i)}))
                    .collect();
                let response = http.post(&url).json(&json!({"items": items})).send().await?;
                let status = response.status();
                anyhow::ensure!(status.is_success(), "push answered {status}");
                let answer: Value = response.json().await?;
                let queued = answer.as_array().map_or(0, |items| {
                    items.iter().filter(|i| i["status"] == "queued").count()
                });
                refused.fetch_add(items.len() - queued, Ordering::SeqCst);
            }
        }));
    }
    for t in tasks {
        t.await??;
    }
    let rate = s.messages as f64 / started.elapsed().as_secs_f64();
    Ok((rate, refused.load(Ordering::SeqCst)))
}

/// Every delivery of the drain, by the payload's sequence number.
struct Drain {
    seen: Vec<AtomicU32>,
    distinct: AtomicUsize,
    strays: AtomicUsize,
    ack_refused: AtomicUsize,
    last_progress: Mutex<Instant>,
    finished: Mutex<Option<Instant>>,
}

impl Drain {
    /// Counts a batch of deliveries; true when it completed the set.
    fn record(&self, messages: &[Value]) -> bool {
        let mut completed = false;
        for m in messages {
            let order = m["data"]["order"].as_u64().map(|o| o as usize);
            match order.and_then(|o| self.seen.get(o)) {
                Some(count) if count.fetch_add(1, Ordering::SeqCst) == 0 => {
                    let distinct = self.distinct.fetch_add(1, Ordering::SeqCst) + 1;
                    completed |= distinct == self.seen.len();
                    *self.last_progress.lock().expect("drain lock") = Instant::now();
                }
                Some(_) => {}
                None => {
                    self.strays.fetch_add(1, Ordering::SeqCst);
                }
            }
        }
        completed
    }

    fn done(&self) -> bool {
        self.distinct.load(Ordering::SeqCst) >= self.seen.len()
            || self.last_progress.lock().expect("drain lock").elapsed() > STALL
    }
}

/// What the drain delivered against what was pushed.
pub(crate) struct DrainOutcome {
    pub(crate) deliveries: usize,
    pub(crate) duplicates: usize,
    pub(crate) missing: usize,
    pub(crate) strays: usize,
    pub(crate) ack_refused: usize,
}

impl DrainOutcome {
    pub(crate) fn exactly_once(&self) -> bool {
        self.duplicates == 0 && self.missing == 0 && self.strays == 0 && self.ack_refused == 0
    }

    pub(crate) fn describe(&self, push_refused: usize) -> String {
        format!(
            "{} deliveries, {} duplicates, {} missing, {} unknown, {} acks refused, {} pushes refused",
            self.deliveries, self.duplicates, self.missing, self.strays, self.ack_refused, push_refused
        )
    }
}

/// Drains the queue with consumer i on node i mod n (leased pops, one batch ack each) until
/// every message arrived or nothing arrived for `STALL`; then one more pop per node must
/// find nothing. Returns msg/s (up to the ack that completed the set) and the tally.
pub(crate) async fn pop_ack_phase(
    s: &Settings,
    http: &reqwest::Client,
    bases: &[String],
    queue: &str,
) -> anyhow::Result<(f64, DrainOutcome)> {
    let drain = Arc::new(Drain {
        seen: (0..s.messages).map(|_| AtomicU32::new(0)).collect(),
        distinct: AtomicUsize::new(0),
        strays: AtomicUsize::new(0),
        ack_refused: AtomicUsize::new(0),
        last_progress: Mutex::new(Instant::now()),
        finished: Mutex::new(None),
    });
    let started = Instant::now();
    let mut tasks = Vec::new();
    for c in 0..s.consumers {
        let base = bases[c % bases.len()].clone();
        let (http, drain) = (http.clone(), drain.clone());
        let pop_url = format!("{base}/api/v1/pop/queue/{queue}?{DRAIN_POP}");
        tasks.push(tokio::spawn(async move {
            while !drain.done() {
                let messages = pop(&http, &pop_url).await?;
                if messages.is_empty() {
                    continue;
                }
                let completed = drain.record(&messages);
                let refused = ack(&http, &base, &messages).await?;
                drain.ack_refused.fetch_add(refused, Ordering::SeqCst);
                if completed {
                    *drain.finished.lock().expect("drain lock") = Some(Instant::now());
                }
            }
            anyhow::Ok(())
        }));
    }
    for t in tasks {
        t.await??;
    }
    let finished = drain.finished.lock().expect("drain lock").take();
    let elapsed = finished.unwrap_or_else(Instant::now) - started;
    for base in bases {
        let late = pop(http, &format!("{base}/api/v1/pop/queue/{queue}?batch=100")).await?;
        if !late.is_empty() {
            drain.record(&late);
            let refused = ack(http, base, &late).await?;
            drain.ack_refused.fetch_add(refused, Ordering::SeqCst);
        }
    }
    let counts: Vec<u32> = drain
        .seen
        .iter()
        .map(|c| c.load(Ordering::SeqCst))
        .collect();
    let outcome = DrainOutcome {
        deliveries: counts.iter().map(|&c| c as usize).sum(),
        duplicates: counts.iter().map(|&c| c.saturating_sub(1) as usize).sum(),
        missing: counts.iter().filter(|&&c| c == 0).count(),
        strays: drain.strays.load(Ordering::SeqCst),
        ack_refused: drain.ack_refused.load(Ordering::SeqCst),
    };
    let rate = drain.distinct.load(Ordering::SeqCst) as f64 / elapsed.as_secs_f64();
    Ok((rate, outcome))
}

/// Push-sent → pop-answered of one consumer parked on `waiter`, the push going through
/// `pusher`, `s.trials` times; ms, in trial order.
pub(crate) async fn wake_phase(
    s: &Settings,
    http: &reqwest::Client,
    waiter: &str,
    pusher: &str,
    queue: &str,
) -> anyhow::Result<Vec<f64>> {
    let pop_url =
        format!("{waiter}/api/v1/pop/queue/{queue}?batch=10&wait=true&timeout=10000&autoAck=true");
    configure(http, pusher, queue).await?;
    // First contact (the group's seed on the waiting node) before measuring.
    pop(
        http,
        &format!("{waiter}/api/v1/pop/queue/{queue}?autoAck=true"),
    )
    .await?;
    let mut out = Vec::with_capacity(s.trials);
    for i in 0..s.trials {
        let parked = tokio::spawn({
            let (http, url) = (http.clone(), pop_url.clone());
            async move {
                let messages = pop(&http, &url).await?;
                anyhow::Ok((Instant::now(), messages))
            }
        });
        wait_until_parked(http, waiter).await?;
        let sent = Instant::now();
        let item =
            json!({"queue": queue, "partition": format!("w{}", i % 4), "payload": {"trial": i}});
        let pushed = http
            .post(format!("{pusher}/api/v1/push"))
            .json(&json!({"items": [item]}))
            .send()
            .await?;
        anyhow::ensure!(
            pushed.status().is_success(),
            "wake push answered {}",
            pushed.status()
        );
        let (answered, messages) = parked.await??;
        anyhow::ensure!(
            messages.len() == 1 && messages[0]["data"]["trial"] == i,
            "wake trial {i}: the parked pop answered {} messages instead of this trial's one",
            messages.len()
        );
        out.push(answered.saturating_duration_since(sent).as_secs_f64() * 1000.0);
    }
    Ok(out)
}

/// Polls the node's parked-pop gauge rather than sleeping a guessed time.
async fn wait_until_parked(http: &reqwest::Client, base: &str) -> anyhow::Result<()> {
    let deadline = Instant::now() + Duration::from_secs(5);
    while metrics(http, base).await?["pops"]["parked"].as_i64() < Some(1) {
        anyhow::ensure!(
            Instant::now() < deadline,
            "the wake pop never parked on {base}"
        );
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    Ok(())
}
