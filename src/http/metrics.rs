//! `GET /metrics`: the broker's counters as JSON (pops, SQL calls, wakes, parked pops, the
//! limiter, the pool and the mesh); `GET /metrics/prometheus`: the same numbers in the
//! Prometheus text format, for a ServiceMonitor, plus per-queue gauges from the database
//! (`queen_queue_depth`, `queen_queue_lag_seconds`, `queen_queue_throughput`).

use std::sync::atomic::Ordering;

use actix_web::{web, HttpResponse};
use serde_json::{json, Value};

use tracing::warn;

use super::AppState;
use crate::db::admin::status::{queue_metrics, QueueMetrics};

/// `GET /metrics`.
#[utoipa::path(
    get,
    path = "/metrics",
    tag = "metrics",
    responses((status = 200, description = "counters as JSON", body = Object))
)]
pub async fn metrics(state: web::Data<AppState>) -> HttpResponse {
    HttpResponse::Ok().json(snapshot(&state).await)
}

/// `GET /metrics/prometheus`: every number of the JSON snapshot outside its per-group and
/// per-peer lists, named by its path (`queen_pool_in_use`, `queen_mesh_hints_received`),
/// then one labelled sample per queue of its depth (messages queue mode has not passed),
/// lag (seconds since the oldest of them was pushed) and throughput (messages pushed in the
/// last minute), from one SQL function. If the database does not answer, the counters are
/// still served and the queue gauges are left out.
#[utoipa::path(
    get,
    path = "/metrics/prometheus",
    tag = "metrics",
    responses(
        (status = 200, description = "Prometheus text format", content_type = "text/plain", body = String)
    )
)]
pub async fn prometheus(state: web::Data<AppState>) -> HttpResponse {
    let body = snapshot(&state).await;
    let mut text = prometheus_text(&body);
    match queue_gauges(&state).await {
        Ok(queues) => text.push_str(&queue_text(&queues)),
        Err(error) => warn!(error = %error, "queue gauges left out of the metrics"),
    }
    HttpResponse::Ok()
        .content_type("text/plain; version=0.0.4")
        .body(text)
}

/// Window of `queen_queue_throughput`, in seconds.
const THROUGHPUT_WINDOW_SECS: i32 = 60;

async fn queue_gauges(state: &AppState) -> Result<Vec<QueueMetrics>, crate::db::DbError> {
    let mut conn = state.broker.db.conn().await?;
    queue_metrics(&mut conn, THROUGHPUT_WINDOW_SECS).await
}

/// Renders one gauge's value of a queue.
type Render = fn(&QueueMetrics) -> String;

/// The per-queue samples, labelled by queue (and tenant, when not the default one).
fn queue_text(queues: &[QueueMetrics]) -> String {
    let mut out = String::new();
    let gauges: [(&str, &str, Render); 3] = [
        (
            "queen_queue_depth",
            "messages the queue-mode cursor has not passed",
            |q| q.depth.to_string(),
        ),
        (
            "queen_queue_lag_seconds",
            "seconds since the oldest message queue mode has not passed was pushed",
            |q| format!("{:.3}", q.lag_seconds),
        ),
        (
            "queen_queue_throughput",
            "messages pushed in the last minute",
            |q| q.throughput.to_string(),
        ),
    ];
    for (name, help, value) in gauges {
        out.push_str(&format!("# HELP {name} {help}\n# TYPE {name} gauge\n"));
        for q in queues {
            let tenant = if q.tenant.is_empty() {
                String::new()
            } else {
                format!("tenant=\"{}\",", label(&q.tenant))
            };
            out.push_str(&format!(
                "{name}{{{tenant}queue=\"{}\"}} {}\n",
                label(&q.queue),
                value(q)
            ));
        }
    }
    out
}

/// A label value escaped as the text format asks (backslash, quote, newline).
fn label(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// The Prometheus text of a JSON snapshot: numbers and booleans (as 0/1) become untyped
/// samples; lists and strings are left to the JSON form.
fn prometheus_text(body: &Value) -> String {
    let mut out = String::new();
    flatten("queen", body, &mut out);
    out
}

fn flatten(name: &str, value: &Value, out: &mut String) {
    match value {
        Value::Object(fields) => {
            for (key, field) in fields {
                flatten(&format!("{name}_{}", snake_case(key)), field, out);
            }
        }
        Value::Number(n) => {
            out.push_str(&format!("# TYPE {name} untyped\n{name} {n}\n"));
        }
        Value::Bool(b) => {
            out.push_str(&format!("# TYPE {name} untyped\n{name} {}\n", u8::from(*b)));
        }
        Value::Array(_) | Value::String(_) | Value::Null => {}
    }
}

/// `inFlight` → `in_flight`; anything outside `[a-z0-9_]` becomes `_`.
fn snake_case(key: &str) -> String {
    let mut out = String::with_capacity(key.len() + 4);
    for c in key.chars() {
        if c.is_ascii_uppercase() {
            out.push('_');
            out.push(c.to_ascii_lowercase());
        } else if c.is_ascii_alphanumeric() {
            out.push(c);
        } else {
            out.push('_');
        }
    }
    out
}

/// The JSON counters document (also served by `/api/v1/analytics/system-metrics`).
pub(crate) async fn snapshot(state: &AppState) -> Value {
    let broker = &state.broker;
    let mut body = broker.metrics.to_json();
    let limiter = broker.limiter.snapshot();
    let (connections, idle) = broker.db.state();
    let stats = broker.db.stats();
    body["limiter"] = json!({
        "limit": limiter.limit,
        "inFlight": limiter.in_flight,
        "acquiredTotal": limiter.acquired_total,
    });
    body["pool"] = json!({
        "size": broker.config.database.pool_size,
        "connections": connections,
        "idle": idle,
        "inUse": connections.saturating_sub(idle),
        "checkoutsTotal": stats.checkouts.load(Ordering::Relaxed),
        "backgroundCheckoutsTotal": stats.background_checkouts.load(Ordering::Relaxed),
        "quarantined": stats.quarantined.load(Ordering::Relaxed),
    });
    body["groups"] = json!(broker.registry.stats().await);
    body["hotlist"] = json!(broker.config.pop.hotlist);
    body["maintenance"] = json!(broker.in_maintenance());
    body["mesh"] = broker.mesh.snapshot();
    body
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nested_numbers_become_snake_case_samples_and_lists_are_left_out() {
        let body = json!({
            "pool": {"inUse": 3, "size": 20},
            "maintenance": true,
            "mesh": {"nodeId": "a", "hintsReceived": 7, "peers": [{"connected": true}]},
        });
        let text = prometheus_text(&body);
        assert!(text.contains("\nqueen_pool_in_use 3\n"), "{text}");
        assert!(text.contains("\nqueen_pool_size 20\n"), "{text}");
        assert!(text.contains("\nqueen_maintenance 1\n"), "{text}");
        assert!(text.contains("\nqueen_mesh_hints_received 7\n"), "{text}");
        assert!(
            !text.contains("node_id") && !text.contains("peers"),
            "{text}"
        );
        assert!(text.contains("# TYPE queen_pool_in_use untyped\n"));
    }

    #[test]
    fn queue_gauges_are_labelled_by_queue_and_escape_label_values() {
        let queues = vec![QueueMetrics {
            tenant: String::new(),
            queue: "a\"b".into(),
            depth: 7,
            lag_seconds: 1.5,
            throughput: 3,
        }];
        let text = queue_text(&queues);
        assert!(
            text.contains("queen_queue_depth{queue=\"a\\\"b\"} 7\n"),
            "{text}"
        );
        assert!(
            text.contains("queen_queue_lag_seconds{queue=\"a\\\"b\"} 1.500\n"),
            "{text}"
        );
        assert!(
            text.contains("queen_queue_throughput{queue=\"a\\\"b\"} 3\n"),
            "{text}"
        );
        assert!(text.contains("# TYPE queen_queue_depth gauge\n"), "{text}");
    }
}
