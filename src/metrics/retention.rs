//! What the retention sweeper did on this node, for `/metrics`: runs, the last run's time
//! and duration, and what it removed, in total and per queue. Counters of one node; a
//! cluster's totals are their sum (only one node sweeps at a time).

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use serde_json::{json, Value};

/// What one batch of segment retention removed from one partition of a queue, as plain
/// numbers: the sweeper converts the database's answer, so these counters know nothing of
/// it. Negative counts are read as none.
#[derive(Debug, Clone, Copy)]
pub struct QueueSwept<'a> {
    /// The queue's tenant.
    pub tenant: &'a str,
    /// The queue.
    pub queue: &'a str,
    /// Segments deleted.
    pub segments: i64,
    /// Stored bytes of those segments.
    pub bytes: i64,
    /// Legacy `queen.dedup` rows of their offsets.
    pub dedup_rows: i64,
}

/// The sweeper's counters (a mutex: written once per batch, read per scrape).
#[derive(Debug, Default)]
pub struct SweepStats {
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    runs: u64,
    skipped: u64,
    errors: u64,
    last_run_unix_ms: Option<i64>,
    last_duration_ms: u64,
    segments: u64,
    bytes: u64,
    dedup_rows: u64,
    dead_letters: u64,
    traces: u64,
    partitions: u64,
    cursors: u64,
    kv_keys: u64,
    /// (tenant, queue) -> (segments, bytes).
    queues: HashMap<(String, String), (u64, u64)>,
}

impl SweepStats {
    fn with<T>(&self, f: impl FnOnce(&mut Inner) -> T) -> T {
        f(&mut self
            .inner
            .lock()
            .expect("sweep stats lock is never poisoned"))
    }

    /// Counts a batch of segment retention, one item per partition deleted from.
    pub fn segments<'a>(&self, removed: impl IntoIterator<Item = QueueSwept<'a>>) {
        self.with(|s| {
            for r in removed {
                let (segments, bytes) = (r.segments.max(0) as u64, r.bytes.max(0) as u64);
                s.segments += segments;
                s.bytes += bytes;
                s.dedup_rows += r.dedup_rows.max(0) as u64;
                let q = s
                    .queues
                    .entry((r.tenant.to_owned(), r.queue.to_owned()))
                    .or_default();
                q.0 += segments;
                q.1 += bytes;
            }
        });
    }

    /// Counts a batch of dead-letter and trace expiry (negative counts are read as none).
    pub fn rows(&self, dead_letters: i64, traces: i64) {
        self.with(|s| {
            s.dead_letters += dead_letters.max(0) as u64;
            s.traces += traces.max(0) as u64;
        });
    }

    /// Counts a batch of idle clean-up: empty partitions and idle groups' cursors removed
    /// (negative counts are read as none).
    pub fn idle(&self, partitions: i64, cursors: i64) {
        self.with(|s| {
            s.partitions += partitions.max(0) as u64;
            s.cursors += cursors.max(0) as u64;
        });
    }

    /// Counts a batch of expired key/value rows removed (negative counts are read as none).
    pub fn kv(&self, keys: i64) {
        self.with(|s| s.kv_keys += keys.max(0) as u64);
    }

    /// Records a finished run.
    pub fn ran(&self, at_unix_ms: i64, took: Duration) {
        self.with(|s| {
            s.runs += 1;
            s.last_run_unix_ms = Some(at_unix_ms);
            s.last_duration_ms = took.as_millis() as u64;
        });
    }

    /// Records a turn left to the node holding the lease.
    pub fn skipped(&self) {
        self.with(|s| s.skipped += 1);
    }

    /// Records a run that failed (logged where it failed).
    pub fn failed(&self) {
        self.with(|s| s.errors += 1);
    }

    /// The counters as the `retention` section of `/metrics`.
    pub fn to_json(&self) -> Value {
        self.with(|s| {
            let mut queues: Vec<Value> = s
                .queues
                .iter()
                .map(|((tenant, queue), (segments, bytes))| {
                    json!({"tenant": tenant, "queue": queue, "segmentsRemoved": segments, "bytesRemoved": bytes})
                })
                .collect();
            queues.sort_by(|a, b| a["queue"].as_str().cmp(&b["queue"].as_str()));
            json!({
                "runs": s.runs,
                "skipped": s.skipped,
                "errors": s.errors,
                "lastRunAt": s.last_run_unix_ms.map(|ms| ms as f64 / 1000.0),
                "lastDurationMs": s.last_duration_ms,
                "lastDurationSeconds": s.last_duration_ms as f64 / 1000.0,
                "removed": {
                    "segments": s.segments,
                    "bytes": s.bytes,
                    "dedupRows": s.dedup_rows,
                    "deadLetters": s.dead_letters,
                    "traces": s.traces,
                    "partitions": s.partitions,
                    "cursors": s.cursors,
                    "kvKeys": s.kv_keys,
                },
                "queues": queues,
            })
        })
    }
}
