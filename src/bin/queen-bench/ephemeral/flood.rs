//! The flood: callers push as fast as they can into `dropOldest` queues whose bounds add
//! up to more than the broker's `QUEEN_EPHEMERAL_MAX_BYTES`, and into one `reject`
//! queue, while the broker's resident memory (VmRSS of /proc/<pid>/status) is sampled.
//! The bound holds when the growth (the peak minus the resident memory before the flood)
//! stays within the cap plus the fixed overhead README "Ephemeral queues" states.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use serde_json::{json, Value};

use super::client::{Client, Pushed};

/// `dropOldest` queues of the flood (one caller each), beside the one `reject` queue.
const DROP_OLDEST_QUEUES: usize = 3;

/// What README "Ephemeral queues" lets a flood add beside the cap (allocator slack, HTTP
/// buffers; `tests/broker/ephemeral/memory.rs` holds the broker to it).
pub const ALLOWANCE: u64 = 48 << 20;

/// How often resident memory is read.
const SAMPLE_EVERY: Duration = Duration::from_millis(10);

/// What the flood saw.
#[derive(Debug, Clone)]
pub struct Flood {
    /// The broker's cap, bytes.
    pub cap: u64,
    /// Resident bytes before the flood.
    pub before: u64,
    /// Highest resident bytes seen during it.
    pub peak: u64,
    /// Messages stored.
    pub stored: u64,
    /// Pushes answered 429.
    pub refused_pushes: u64,
    /// Wall time.
    pub seconds: f64,
    /// The broker's `ephemeral` gauges after the flood (`null` if it has none).
    pub gauges: Value,
}

impl Flood {
    /// Whether the flood's growth (peak minus before) stayed within the cap plus the
    /// allocator slack and HTTP buffers README "Ephemeral queues" allows beside it.
    pub fn within_allowance(&self) -> bool {
        self.peak.saturating_sub(self.before) <= self.cap + ALLOWANCE
    }
}

/// VmRSS of `pid`, bytes.
pub fn resident_bytes(pid: i32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// Floods `base` (broker process `pid`, cap `cap` bytes) for `seconds` on queues named
/// by `queue_name(k)`.
pub async fn run(
    base: &str,
    pid: i32,
    cap: u64,
    seconds: f64,
    payload_bytes: u64,
    batch: u32,
    queue_name: impl Fn(usize) -> String,
) -> anyhow::Result<Flood> {
    let admin = Client::new(base)?;
    let mut queues = Vec::new();
    for k in 0..=DROP_OLDEST_QUEUES {
        let queue = queue_name(k);
        let policy = if k < DROP_OLDEST_QUEUES {
            "dropOldest"
        } else {
            "reject"
        };
        admin
            .configure(
                &queue,
                json!({"maxBytes": cap / 2, "maxLength": 10_000_000, "policy": policy}),
            )
            .await?;
        queues.push(queue);
    }
    let before = resident_bytes(pid).context("reading the broker's resident memory")?;
    let peak = Arc::new(AtomicU64::new(before));
    let done = Arc::new(AtomicBool::new(false));
    let sampler = {
        let (peak, done) = (peak.clone(), done.clone());
        tokio::spawn(async move {
            while !done.load(Ordering::Relaxed) {
                if let Some(rss) = resident_bytes(pid) {
                    peak.fetch_max(rss, Ordering::Relaxed);
                }
                tokio::time::sleep(SAMPLE_EVERY).await;
            }
        })
    };
    let pad = "x".repeat(payload_bytes as usize);
    let started = Instant::now();
    let deadline = started + Duration::from_secs_f64(seconds);
    let mut tasks = Vec::new();
    for queue in queues {
        let client = Client::new(base)?;
        let messages: Vec<Value> = (0..batch).map(|_| json!({"payload": pad})).collect();
        let body = serde_json::to_vec(&json!({"queue": queue, "messages": messages}))?;
        tasks.push(tokio::spawn(async move {
            let (mut stored, mut refused) = (0u64, 0u64);
            while Instant::now() < deadline {
                match client.push_body(body.clone()).await? {
                    Pushed::Stored => stored += u64::from(batch),
                    Pushed::Refused => refused += 1,
                }
            }
            anyhow::Ok((stored, refused))
        }));
    }
    let mut outcome = Ok((0, 0));
    for t in tasks {
        let r = t.await.context("a flood task failed").and_then(|r| r);
        outcome = match (outcome, r) {
            (Ok((s, f)), Ok((s2, f2))) => Ok((s + s2, f + f2)),
            (Err(e), _) | (_, Err(e)) => Err(e),
        };
    }
    let elapsed = started.elapsed().as_secs_f64();
    // A last sample after the pushes: what the broker kept.
    tokio::time::sleep(Duration::from_millis(100)).await;
    done.store(true, Ordering::Relaxed);
    let _ = sampler.await;
    let (stored, refused_pushes) = outcome?;
    let gauges = admin
        .metrics()
        .await
        .map_or(Value::Null, |m| m["ephemeral"].clone());
    Ok(Flood {
        cap,
        before,
        peak: peak.load(Ordering::Relaxed),
        stored,
        refused_pushes,
        seconds: elapsed,
        gauges,
    })
}
