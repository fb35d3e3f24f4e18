//! The retention sweeper: one background task per node, of which one at a time sweeps.
//!
//! Every `QUEEN_RETENTION_INTERVAL_MS` the task tries to take (or renew) the cluster-wide
//! sweeper lease; the node that holds it deletes, in bounded batches with a pause between
//! them, the segments past their queue's retention, dead letters and traces past theirs,
//! key/value rows past their expiry, and (when configured) empty partitions and abandoned
//! groups' cursors. Each batch is one transaction that renews the lease first, so two nodes
//! never sweep at once, and a dead node's turn passes to another once its lease runs out.
//! What it decides to delete is in SQL (`sql/functions/retention_segments_v2.sql`); this
//! task only paces it and counts what it did.

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use tracing::{debug, info, warn};

use crate::broker::Broker;
use crate::config::RetentionConfig;
use crate::db::retention::{self, Budget};
use crate::db::DbError;
use crate::metrics::retention::QueueSwept;

/// A lease outlives this many intervals without renewal: the holder renews at each of its
/// runs, so one late run does not hand the sweep over, and a dead holder's turn passes on
/// within three intervals.
const LEASE_INTERVALS: u32 = 3;

/// The shortest lease, whatever the interval: a holder whose runs are late by less (a busy
/// machine) keeps the sweep instead of handing it back and forth.
const LEASE_FLOOR: Duration = Duration::from_secs(10);

/// Starts the sweeper of this node; it runs until the task is aborted.
pub fn spawn(broker: Arc<Broker>, holder: String) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let config = broker.config.retention.clone();
        let mut tick = tokio::time::interval(config.interval);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            if broker.is_draining() {
                return;
            }
            let started = Instant::now();
            match sweep(&broker, &config, &holder).await {
                Ok(true) => {
                    broker.metrics.retention.ran(unix_ms(), started.elapsed());
                    debug!(
                        elapsed_ms = started.elapsed().as_millis() as u64,
                        "retention sweep done"
                    );
                }
                Ok(false) => broker.metrics.retention.skipped(),
                Err(error) => {
                    broker.metrics.retention.failed();
                    warn!(error = %error, "retention sweep failed");
                }
            }
        }
    })
}

/// Hands the lease over when this node stops, so another sweeps without waiting for it to
/// expire.
pub async fn release(broker: &Broker, holder: &str) {
    let result = match broker.db.background_conn().await {
        Ok(mut conn) => retention::release(&mut conn, holder).await,
        Err(e) => Err(e),
    };
    if let Err(error) = result {
        debug!(error = %error, "sweeper lease not released");
    }
}

/// One sweep: false when another node holds the lease.
async fn sweep(broker: &Broker, config: &RetentionConfig, holder: &str) -> Result<bool, DbError> {
    let lease_ms = (config.interval * LEASE_INTERVALS)
        .max(LEASE_FLOOR)
        .as_millis()
        .min(i32::MAX as u128) as i32;
    let budget = Budget {
        batch: config.batch,
        lease_ms,
    };
    let stats = &broker.metrics.retention;
    let mut after = None;
    loop {
        let batch = {
            let mut conn = broker.db.background_conn().await?;
            retention::segments(
                &mut conn,
                holder,
                budget,
                after,
                config.default_secs,
                config.default_completed_secs,
                broker.config.push.dedup_window_secs,
            )
            .await?
        };
        let Some(batch) = batch else {
            return Ok(false);
        };
        stats.segments(batch.removed.iter().map(|r| QueueSwept {
            tenant: &r.tenant,
            queue: &r.queue,
            segments: r.segments,
            bytes: r.bytes,
            dedup_rows: r.dedup_rows,
        }));
        for r in &batch.removed {
            info!(tenant = %r.tenant, queue = %r.queue, segments = r.segments, bytes = r.bytes, "retention removed segments");
        }
        match batch.resume_after {
            Some(next) => after = Some(next),
            None => break,
        }
        pause(broker, config).await;
    }
    loop {
        let removed = {
            let mut conn = broker.db.background_conn().await?;
            retention::rows(
                &mut conn,
                holder,
                budget,
                config.dead_letter_secs,
                config.trace_secs,
            )
            .await?
        };
        let Some(removed) = removed else {
            return Ok(false);
        };
        stats.rows(removed.first, removed.second);
        if removed.first.max(removed.second) < i64::from(config.batch) {
            break;
        }
        pause(broker, config).await;
    }
    loop {
        let removed = {
            let mut conn = broker.db.background_conn().await?;
            retention::kv(&mut conn, holder, budget).await?
        };
        let Some(removed) = removed else {
            return Ok(false);
        };
        stats.kv(removed);
        if removed < i64::from(config.batch) {
            break;
        }
        pause(broker, config).await;
    }
    if config.empty_partition_secs > 0 || config.idle_group_secs > 0 {
        loop {
            let removed = {
                let mut conn = broker.db.background_conn().await?;
                retention::idle(
                    &mut conn,
                    holder,
                    budget,
                    config.empty_partition_secs,
                    config.idle_group_secs,
                )
                .await?
            };
            let Some(removed) = removed else {
                return Ok(false);
            };
            stats.idle(removed.first, removed.second);
            if removed.first < i64::from(config.batch) {
                break;
            }
            pause(broker, config).await;
        }
    }
    Ok(true)
}

/// The pause between two batches (cut short when the node stops).
async fn pause(broker: &Broker, config: &RetentionConfig) {
    tokio::select! {
        _ = tokio::time::sleep(config.pause) => {}
        _ = broker.draining.cancelled() => {}
    }
}

fn unix_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}
