//! The phases every system goes through, whatever it is: push a planned set of messages
//! (optionally paced), and drain them with consumers until every group has every message,
//! checking exactly-once on the way. The latency phase is both at once.
//!
//! Producers and consumers move into tasks and come back when the phase ends, so each keeps
//! its connection from one phase to the next.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::task::JoinSet;

use crate::args::Limit;
use crate::system::{Consumer, Producer};
use crate::verify::{Verifier, VerifyReport};
use crate::workload::{now_micros, Workload};

/// What the progress line shows.
#[derive(Debug, Default)]
pub struct Progress {
    label: Mutex<String>,
    done: AtomicU64,
}

impl Progress {
    /// Starts counting a new phase.
    pub fn begin(&self, label: &str) {
        *self.label.lock().expect("progress lock") = label.to_owned();
        self.done.store(0, Ordering::Relaxed);
    }

    fn add(&self, n: u64) {
        self.done.fetch_add(n, Ordering::Relaxed);
    }

    /// (phase label, messages so far).
    pub fn read(&self) -> (String, u64) {
        (
            self.label.lock().expect("progress lock").clone(),
            self.done.load(Ordering::Relaxed),
        )
    }
}

/// What a push phase should send.
#[derive(Debug, Clone, Copy)]
pub struct PushPlan {
    /// First sequence number.
    pub first: u64,
    /// When to stop.
    pub limit: Limit,
    /// Messages per second to offer, or as fast as possible.
    pub pace: Option<f64>,
}

/// The end of a push phase.
pub struct Pushed<P> {
    /// The producers, for the next phase.
    pub producers: Vec<P>,
    /// Messages stored: exactly `first .. first + messages`.
    pub messages: u64,
    /// From the first request to the last answer.
    pub elapsed: Duration,
}

/// Pushes with every producer at once until the plan is done.
pub async fn push<P: Producer>(
    producers: Vec<P>,
    workload: Arc<Workload>,
    plan: PushPlan,
    progress: Arc<Progress>,
) -> anyhow::Result<Pushed<P>> {
    let start = Instant::now();
    let (end, deadline) = match plan.limit {
        Limit::Messages(n) => (plan.first + n, None),
        Limit::Duration(d) => (u64::MAX, Some(start + d)),
    };
    let next = Arc::new(AtomicU64::new(0));
    let pushed = Arc::new(AtomicU64::new(0));
    let last_answer = Arc::new(Mutex::new(start));
    let mut tasks = JoinSet::new();
    for mut producer in producers {
        let (workload, next, pushed, progress) = (
            workload.clone(),
            next.clone(),
            pushed.clone(),
            progress.clone(),
        );
        let last_answer = last_answer.clone();
        tasks.spawn(async move {
            loop {
                // Checked before claiming, so every claimed batch is pushed and the stored
                // sequence numbers stay one unbroken range.
                if deadline.is_some_and(|d| Instant::now() >= d) {
                    break;
                }
                let k = next.fetch_add(1, Ordering::Relaxed);
                if let Some(rate) = plan.pace {
                    let due =
                        start + Duration::from_secs_f64(k as f64 * workload.batch as f64 / rate);
                    tokio::time::sleep_until(due.into()).await;
                }
                let Some(batch) = workload.batch(plan.first, end, k) else {
                    break;
                };
                producer.push(&batch).await?;
                let n = batch.messages.len() as u64;
                pushed.fetch_add(n, Ordering::Relaxed);
                progress.add(n);
                *last_answer.lock().expect("push clock lock") = Instant::now();
            }
            anyhow::Ok(producer)
        });
    }
    let producers = join_all(tasks).await?;
    let elapsed = last_answer
        .lock()
        .expect("push clock lock")
        .duration_since(start);
    Ok(Pushed {
        producers,
        messages: pushed.load(Ordering::Relaxed),
        elapsed,
    })
}

/// The end of a drain phase.
pub struct Drained<C> {
    /// The consumers, for the next phase.
    pub consumers: Vec<C>,
    /// Distinct deliveries (a message counts once per group).
    pub deliveries: u64,
    /// From the phase's start to the delivery that completed the last group (the whole
    /// phase when it timed out).
    pub elapsed: Duration,
    /// The exactly-once verdict, after one last non-waiting pop per group.
    pub check: VerifyReport,
    /// End-to-end latencies in µs, when asked for.
    pub latencies: Vec<u64>,
}

/// Consumes until every group has every expected message, or `timeout`.
pub async fn drain<C: Consumer>(
    consumers: Vec<C>,
    verifier: Verifier,
    timeout: Duration,
    record_latency: bool,
    progress: Arc<Progress>,
) -> anyhow::Result<Drained<C>> {
    let start = Instant::now();
    let deadline = start + timeout;
    let shared = Arc::new(Mutex::new(Shared {
        verifier,
        completed_at: None,
        latencies: Vec::new(),
    }));
    let failed = Arc::new(AtomicBool::new(false));
    let mut tasks = JoinSet::new();
    for mut consumer in consumers {
        let (shared, progress, failed) = (shared.clone(), progress.clone(), failed.clone());
        tasks.spawn(async move {
            let group = consumer.group();
            loop {
                let done = shared
                    .lock()
                    .expect("drain lock")
                    .verifier
                    .group_complete(group);
                if done || Instant::now() >= deadline || failed.load(Ordering::Relaxed) {
                    break;
                }
                let got = match consumer.pop_ack(true).await {
                    Ok(got) => got,
                    Err(e) => {
                        failed.store(true, Ordering::Relaxed);
                        return Err(e);
                    }
                };
                let received = now_micros();
                let mut s = shared.lock().expect("drain lock");
                let before = s.verifier.distinct_total();
                for d in &got {
                    s.verifier.record(group, d.seq);
                    if record_latency {
                        s.latencies.push(received.saturating_sub(d.sent_us));
                    }
                }
                progress.add(s.verifier.distinct_total() - before);
                if s.completed_at.is_none() && s.verifier.complete() {
                    s.completed_at = Some(Instant::now());
                }
            }
            anyhow::Ok(consumer)
        });
    }
    let mut consumers = join_all(tasks).await?;

    // Anything still deliverable now is a duplicate or a stray: one last look per group.
    let mut looked = Vec::new();
    for consumer in &mut consumers {
        let group = consumer.group();
        if looked.contains(&group) {
            continue;
        }
        looked.push(group);
        let extra = consumer.pop_ack(false).await?;
        let mut s = shared.lock().expect("drain lock");
        for d in extra {
            s.verifier.record(group, d.seq);
        }
    }

    let mut s = shared.lock().expect("drain lock");
    let elapsed = s
        .completed_at
        .map_or_else(|| start.elapsed(), |t| t.duration_since(start));
    Ok(Drained {
        consumers,
        deliveries: s.verifier.distinct_total(),
        elapsed,
        check: s.verifier.report(),
        latencies: std::mem::take(&mut s.latencies),
    })
}

struct Shared {
    verifier: Verifier,
    completed_at: Option<Instant>,
    latencies: Vec<u64>,
}

/// Awaits every task; the first error wins (the others are cancelled with the set).
async fn join_all<T: 'static>(mut tasks: JoinSet<anyhow::Result<T>>) -> anyhow::Result<Vec<T>> {
    let mut out = Vec::new();
    while let Some(joined) = tasks.join_next().await {
        out.push(joined??);
    }
    Ok(out)
}

/// Prints a progress line once a second until the returned handle is aborted.
pub fn spawn_ticker(progress: Arc<Progress>) -> tokio::task::JoinHandle<()> {
    use std::io::{IsTerminal, Write};
    tokio::spawn(async move {
        let tty = std::io::stderr().is_terminal();
        let mut last = (String::new(), 0u64);
        let mut interval = tokio::time::interval(Duration::from_secs(1));
        interval.tick().await;
        loop {
            interval.tick().await;
            let (label, done) = progress.read();
            if label.is_empty() {
                continue;
            }
            let rate = if label == last.0 {
                done.saturating_sub(last.1)
            } else {
                done
            };
            let line = format!("  [{label}] {done} messages, {rate} msg/s");
            if tty {
                eprint!("\r\x1b[2K{line}");
                let _ = std::io::stderr().flush();
            } else {
                eprintln!("{line}");
            }
            last = (label, done);
        }
    })
}
