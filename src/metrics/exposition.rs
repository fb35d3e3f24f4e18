//! `/metrics/prometheus`: the broker's numbers as typed Prometheus families.
//!
//! Counters and gauges are read from the JSON snapshot (the one `/metrics` serves, so both
//! always agree) into a registry built for this scrape, with their types, help texts and
//! labels declared here; what the database adds (per-queue depth, lag and throughput,
//! per-group lag, dead letters) comes in as [`FromDatabase`]; the process's latency
//! histograms ([`super::latency`]) are gathered beside them. Rendering never fails a scrape:
//! a family that cannot be built is left out and logged.

use prometheus::core::Collector;
use prometheus::{GaugeVec, IntCounterVec, Opts, Registry, TextEncoder};
use serde_json::Value;
use tracing::warn;

use super::latency::latency;
use families::{Family, COUNTERS, GAUGES};

/// What the database adds to a scrape.
#[derive(Debug, Default)]
pub struct FromDatabase {
    /// Every queue's depth, lag and pushes in the last minute.
    pub queues: Vec<QueueGauges>,
    /// The consumer groups' lag (`GET /api/v1/consumer-groups`'s objects, each with its
    /// `tenant`).
    pub groups: Value,
    /// Dead letters now held, per tenant.
    pub dead_letters: Vec<(String, i64)>,
}

/// One queue's gauges, as plain numbers: the handler converts the database's rows, so the
/// exposition knows nothing of them.
#[derive(Debug, Clone)]
pub struct QueueGauges {
    /// The queue's tenant.
    pub tenant: String,
    /// Queue name.
    pub queue: String,
    /// Messages the queue-mode cursor has not passed.
    pub depth: i64,
    /// Age in seconds of the oldest of them.
    pub lag_seconds: f64,
    /// Messages pushed in the last minute.
    pub throughput: i64,
}

/// The Prometheus text of a scrape. `ready` is 0 while the node drains or its database did
/// not answer. `node_wide` adds the process's latency histograms, which count every
/// tenant's requests (a snapshot without the node's counters leaves those out by itself).
pub fn render(snapshot: &Value, db: Option<&FromDatabase>, ready: bool, node_wide: bool) -> String {
    let registry = Registry::new();
    let register = |c: Box<dyn Collector>| {
        if let Err(error) = registry.register(c) {
            warn!(error = %error, "metric family left out of the scrape");
        }
    };
    for family in COUNTERS {
        if let Some(c) = counter(family, snapshot) {
            register(Box::new(c));
        }
    }
    for family in GAUGES {
        if let Some(g) = gauge(family, snapshot) {
            register(Box::new(g));
        }
    }
    if let Some(g) = single(
        "queen_ready",
        "1 while the node takes work (not draining, database answering)",
        f64::from(u8::from(ready)),
    ) {
        register(Box::new(g));
    }
    let (per_queue, tables) = retention::families(snapshot);
    for c in per_queue {
        register(Box::new(c));
    }
    if let Some(g) = tables {
        register(Box::new(g));
    }
    if let Some(db) = db {
        for g in database_gauges(db) {
            register(Box::new(g));
        }
    }
    let mut families = registry.gather();
    if node_wide {
        families.extend(latency().registry.gather());
    }
    let mut text = String::new();
    if let Err(error) = TextEncoder::new().encode_utf8(&families, &mut text) {
        warn!(error = %error, "metrics could not be encoded");
    }
    text
}

fn number(snapshot: &Value, pointer: &str) -> Option<f64> {
    match snapshot.pointer(pointer)? {
        Value::Bool(b) => Some(f64::from(u8::from(*b))),
        v => v.as_f64(),
    }
}

fn counter((name, help, label, samples): &Family, snapshot: &Value) -> Option<IntCounterVec> {
    let labels: &[&str] = if label.is_empty() { &[] } else { &[label] };
    let family = IntCounterVec::new(Opts::new(*name, *help), labels).ok()?;
    for (value, pointer) in *samples {
        let n = number(snapshot, pointer)?;
        let values: &[&str] = if label.is_empty() { &[] } else { &[value] };
        family.with_label_values(values).inc_by(n.max(0.0) as u64);
    }
    Some(family)
}

fn gauge((name, help, label, samples): &Family, snapshot: &Value) -> Option<GaugeVec> {
    let labels: &[&str] = if label.is_empty() { &[] } else { &[label] };
    let family = GaugeVec::new(Opts::new(*name, *help), labels).ok()?;
    for (value, pointer) in *samples {
        let n = number(snapshot, pointer)?;
        let values: &[&str] = if label.is_empty() { &[] } else { &[value] };
        family.with_label_values(values).set(n);
    }
    Some(family)
}

fn single(name: &str, help: &str, value: f64) -> Option<GaugeVec> {
    let family = GaugeVec::new(Opts::new(name, help), &[]).ok()?;
    family.with_label_values(&[] as &[&str]).set(value);
    Some(family)
}

/// A per-queue gauge: name, help, value.
type QueueGauge = (&'static str, &'static str, fn(&QueueGauges) -> f64);

/// Per-queue and per-group gauges, and the dead letters held.
fn database_gauges(db: &FromDatabase) -> Vec<GaugeVec> {
    let mut out = Vec::new();
    let queue_families: [QueueGauge; 3] = [
        (
            "queen_queue_depth",
            "messages the queue-mode cursor has not passed",
            |q| q.depth as f64,
        ),
        (
            "queen_queue_lag_seconds",
            "seconds since the oldest message queue mode has not passed was pushed",
            |q| q.lag_seconds,
        ),
        (
            "queen_queue_throughput",
            "messages pushed in the last minute",
            |q| q.throughput as f64,
        ),
    ];
    // The tenant label only appears once something belongs to another tenant than the
    // default: a single-tenant deployment's series keep their labels.
    let tenants = db.queues.iter().any(|q| !q.tenant.is_empty())
        || db.dead_letters.iter().any(|(t, _)| !t.is_empty())
        || db
            .groups
            .as_array()
            .into_iter()
            .flatten()
            .any(|g| g["tenant"].as_str().is_some_and(|t| !t.is_empty()));
    let labels: &[&str] = if tenants {
        &["tenant", "queue"]
    } else {
        &["queue"]
    };
    for (name, help, value) in queue_families {
        let Ok(family) = GaugeVec::new(Opts::new(name, help), labels) else {
            continue;
        };
        for q in &db.queues {
            let values = [q.tenant.as_str(), q.queue.as_str()];
            family
                .with_label_values(if tenants { &values } else { &values[1..] })
                .set(value(q));
        }
        out.push(family);
    }
    let group_families = [
        (
            "queen_consumer_group_lag_messages",
            "messages a consumer group has not consumed, per queue",
            "totalLag",
        ),
        (
            "queen_consumer_group_lag_seconds",
            "age of the oldest message a consumer group has not consumed, per queue",
            "maxTimeLag",
        ),
    ];
    let group_labels: &[&str] = if tenants {
        &["tenant", "queue", "group"]
    } else {
        &["queue", "group"]
    };
    for (name, help, key) in group_families {
        let Ok(family) = GaugeVec::new(Opts::new(name, help), group_labels) else {
            continue;
        };
        for g in db.groups.as_array().into_iter().flatten() {
            let (Some(queue), Some(group)) = (g["queueName"].as_str(), g["name"].as_str()) else {
                continue;
            };
            let values = [g["tenant"].as_str().unwrap_or(""), queue, group];
            family
                .with_label_values(if tenants { &values } else { &values[1..] })
                .set(g[key].as_f64().unwrap_or(0.0));
        }
        out.push(family);
    }
    let dead_labels: &[&str] = if tenants { &["tenant"] } else { &[] };
    if let Ok(family) = GaugeVec::new(
        Opts::new("queen_dead_letters", "dead letters held now"),
        dead_labels,
    ) {
        let total: i64 = db.dead_letters.iter().map(|(_, n)| n).sum();
        if tenants {
            for (tenant, n) in &db.dead_letters {
                family.with_label_values(&[tenant.as_str()]).set(*n as f64);
            }
        } else {
            family.with_label_values(&[] as &[&str]).set(total as f64);
        }
        out.push(family);
    }
    out
}

mod families;
mod retention;
#[cfg(test)]
mod tests;
