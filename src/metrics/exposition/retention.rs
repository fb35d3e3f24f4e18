//! The retention families that carry a label per queue or per table, read from the
//! `retention` section of the `/metrics` snapshot: what the sweeper removed per queue, and
//! the size of each table of the schema.

use prometheus::{GaugeVec, IntCounterVec, Opts};
use serde_json::Value;

/// `queen_retention_segments_removed_total{queue}`, `queen_retention_bytes_removed_total{queue}`
/// and `queen_table_size_bytes{table}` (left out when the snapshot has no table sizes).
pub fn families(snapshot: &Value) -> (Vec<IntCounterVec>, Option<GaugeVec>) {
    let mut counters = Vec::new();
    let per_queue = [
        (
            "queen_retention_segments_removed_total",
            "segments this node's retention sweeps deleted, per queue",
            "segmentsRemoved",
        ),
        (
            "queen_retention_bytes_removed_total",
            "stored bytes this node's retention sweeps deleted, per queue",
            "bytesRemoved",
        ),
    ];
    let queues = snapshot
        .pointer("/retention/queues")
        .and_then(Value::as_array);
    for (name, help, key) in per_queue {
        let Ok(family) = IntCounterVec::new(Opts::new(name, help), &["tenant", "queue"]) else {
            continue;
        };
        for q in queues.into_iter().flatten() {
            let tenant = q["tenant"].as_str().unwrap_or_default();
            let queue = q["queue"].as_str().unwrap_or_default();
            family
                .with_label_values(&[tenant, queue])
                .inc_by(q[key].as_u64().unwrap_or(0));
        }
        counters.push(family);
    }
    let tables = snapshot
        .pointer("/retention/tables")
        .and_then(Value::as_object)
        .and_then(|tables| {
            let family = GaugeVec::new(
                Opts::new(
                    "queen_table_size_bytes",
                    "bytes of each table of the schema, indexes and TOAST included",
                ),
                &["table"],
            )
            .ok()?;
            for (table, bytes) in tables {
                family
                    .with_label_values(&[table.as_str()])
                    .set(bytes.as_f64().unwrap_or(0.0));
            }
            Some(family)
        });
    (counters, tables)
}
