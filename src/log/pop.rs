//! Pop: one claim, or, with `wait`, repeated claims on the seed's bounded backoff until
//! something arrives or the deadline passes.
//!
//! A pooled connection is held only for the claim itself; between attempts the pop holds
//! nothing. (The wake-driven long-poll of the group actors replaces the fixed schedule here
//! with wakes; the backoff stays as the correctness floor.)

use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use tracing::instrument;
use uuid::Uuid;

use crate::config::PopConfig;
use crate::db::pop::{claim, ClaimParams, ClaimedSlice, PopScope};
use crate::db::{Db, DbError};
use crate::domain::{ConsumerGroup, PartitionName, QueueName, Tenant};

/// Which partitions a pop may claim from (validated names).
#[derive(Debug, Clone)]
pub enum Scope {
    /// Any partition of a queue.
    Queue(QueueName),
    /// One partition of a queue.
    Partition(QueueName, PartitionName),
    /// Any queue matching a namespace and/or task (at least one is set).
    Discover {
        /// Namespace filter.
        namespace: Option<String>,
        /// Task filter.
        task: Option<String>,
    },
}

/// Where a new consumer group starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SubscriptionMode {
    /// Everything retained.
    All,
    /// Only messages pushed after the group's first contact.
    New,
}

/// A validated pop request.
#[derive(Debug, Clone)]
pub struct PopRequest {
    /// What to claim from.
    pub scope: Scope,
    /// The consumer group.
    pub group: ConsumerGroup,
    /// Global message budget (default 200).
    pub batch: u32,
    /// Partitions to claim at most (default 1).
    pub partitions: u32,
    /// Long-poll until the deadline when nothing is there.
    pub wait: bool,
    /// The long-poll deadline.
    pub timeout: Duration,
    /// Commit on delivery (no lease, at-most-once).
    pub auto_ack: bool,
    /// Lease length override in seconds.
    pub lease_seconds: Option<i32>,
    /// Start of a new group.
    pub subscription_mode: SubscriptionMode,
    /// Start time of a new group; wins over the mode.
    pub subscription_from: Option<DateTime<Utc>>,
}

/// What a pop claimed: segment slices under one lease.
#[derive(Debug)]
pub struct Delivery {
    /// The lease shared by every claimed partition; empty with auto-ack.
    pub lease_id: String,
    /// The claimed slices, in delivery order.
    pub slices: Vec<ClaimedSlice>,
}

/// Runs a pop; `None` means nothing to deliver before the deadline.
#[instrument(skip_all, fields(consumer_group = req.group.as_str(), batch_size = req.batch))]
pub async fn pop(
    db: &Db,
    tenant: &Tenant,
    req: &PopRequest,
    backoff: &PopConfig,
) -> Result<Option<Delivery>, DbError> {
    let deadline = Instant::now() + req.timeout;
    let worker = if req.auto_ack {
        String::new()
    } else {
        Uuid::now_v7().to_string()
    };
    let mut attempt = 0u32;
    loop {
        let slices = claim_once(db, tenant, req, &worker).await?;
        if !slices.is_empty() {
            return Ok(Some(Delivery {
                lease_id: worker,
                slices,
            }));
        }
        let now = Instant::now();
        if !req.wait || now >= deadline {
            return Ok(None);
        }
        attempt += 1;
        let pause = wait_interval(attempt, backoff).min(deadline - now);
        tokio::time::sleep(pause).await;
    }
}

async fn claim_once(
    db: &Db,
    tenant: &Tenant,
    req: &PopRequest,
    worker: &str,
) -> Result<Vec<ClaimedSlice>, DbError> {
    let scope = match &req.scope {
        Scope::Queue(q) => PopScope::Wildcard { queue: q.as_str() },
        Scope::Partition(q, p) => PopScope::Specific {
            queue: q.as_str(),
            partition: p.as_str(),
        },
        Scope::Discover { namespace, task } => PopScope::Discover {
            namespace: namespace.as_deref(),
            task: task.as_deref(),
        },
    };
    let params = ClaimParams {
        tenant: tenant.as_str(),
        group: req.group.as_str(),
        worker,
        batch: i32::try_from(req.batch).unwrap_or(i32::MAX),
        partitions: i32::try_from(req.partitions).unwrap_or(i32::MAX),
        lease_seconds: req.lease_seconds,
        auto_ack: req.auto_ack,
        subscription_mode: match req.subscription_mode {
            SubscriptionMode::All => "all",
            SubscriptionMode::New => "new",
        },
        subscription_from: req.subscription_from,
    };
    let mut conn = db.conn().await?;
    claim(&mut conn, &scope, &params).await
}

/// The seed's bounded backoff: the initial interval for the first `threshold` attempts,
/// then `initial × attempt × multiplier`, capped at the maximum.
pub fn wait_interval(attempt: u32, cfg: &PopConfig) -> Duration {
    if attempt <= cfg.backoff_threshold {
        return cfg.wait_initial;
    }
    let grown = cfg.wait_initial.as_secs_f64() * f64::from(attempt) * cfg.backoff_multiplier;
    Duration::from_secs_f64(grown.min(cfg.wait_max.as_secs_f64()).max(0.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg() -> PopConfig {
        PopConfig {
            default_timeout: Duration::from_secs(30),
            wait_initial: Duration::from_millis(100),
            backoff_threshold: 3,
            backoff_multiplier: 2.0,
            wait_max: Duration::from_millis(1000),
        }
    }

    #[test]
    fn the_backoff_stays_at_the_initial_interval_then_grows_to_the_cap() {
        let cfg = cfg();
        let ms: Vec<u128> = (1..=7)
            .map(|a| wait_interval(a, &cfg).as_millis())
            .collect();
        assert_eq!(ms, vec![100, 100, 100, 800, 1000, 1000, 1000]);
    }
}
