//! `GET /metrics`: the broker's counters as JSON (pops, SQL calls, wakes, parked pops, the
//! limiter, the pool and the mesh; the console reads it); `GET /metrics/prometheus`: typed
//! Prometheus families for a ServiceMonitor, rendered by `metrics::exposition`.
//!
//! What a caller sees depends on its tenant. The default tenant (the operator's: no
//! authentication, a token without a tenant claim, or a probe path called without a token)
//! sees the whole node: its counters, and every tenant's group actors, per-queue gauges,
//! group lags and dead letters (labelled by tenant once a tenant other than the default
//! owns a queue). Any other tenant sees
//! only what is its own: its group actors, its queues' gauges, its groups' lag and its
//! dead letters; the node-wide counters (which count every tenant's traffic) are left out.

use std::sync::atomic::Ordering;

use actix_web::{web, HttpRequest, HttpResponse};
use serde_json::{json, Value};

use tracing::warn;

use super::state::AppState;
use crate::db::admin::status::{every_tenant_groups, queue_metrics};
use crate::db::admin::{groups, resources};
use crate::domain::Tenant;
use crate::metrics::exposition::{render, FromDatabase, QueueGauges};

/// `GET /metrics`.
#[utoipa::path(
    get,
    path = "/metrics",
    tag = "metrics",
    responses((status = 200, description = "counters as JSON", body = Object))
)]
pub async fn metrics(state: web::Data<AppState>, req: HttpRequest) -> HttpResponse {
    HttpResponse::Ok().json(snapshot(&state, &state.tenant(&req)).await)
}

/// The registry filter of a tenant's view: none for the default tenant (the whole node),
/// the tenant itself otherwise.
pub(crate) fn tenant_filter(tenant: &Tenant) -> Option<&Tenant> {
    (!tenant.is_default()).then_some(tenant)
}

/// `GET /metrics/prometheus`: typed Prometheus families (`metrics::exposition`): the
/// counters and gauges of the JSON snapshot, per-queue depth, lag and throughput, per-group
/// lag and the dead letters held (from the database), and the process's latency
/// histograms. If the database does not answer, the rest is still served, the database
/// gauges are left out and `queen_ready` is 0.
#[utoipa::path(
    get,
    path = "/metrics/prometheus",
    tag = "metrics",
    responses(
        (status = 200, description = "Prometheus text format", content_type = "text/plain", body = String)
    )
)]
pub async fn prometheus(state: web::Data<AppState>, req: HttpRequest) -> HttpResponse {
    let tenant = state.tenant(&req);
    let body = snapshot(&state, &tenant).await;
    let db = match from_database(&state, &tenant).await {
        Ok(db) => Some(db),
        Err(error) => {
            warn!(error = %error, "database gauges left out of the metrics");
            None
        }
    };
    let ready = db.is_some() && !state.broker.is_draining();
    HttpResponse::Ok()
        .content_type("text/plain; version=0.0.4")
        .body(render(&body, db.as_ref(), ready, tenant.is_default()))
}

/// Window of `queen_queue_throughput`, in seconds.
const THROUGHPUT_WINDOW_SECS: i32 = 60;

async fn from_database(
    state: &AppState,
    tenant: &Tenant,
) -> Result<FromDatabase, crate::db::DbError> {
    let mut conn = state.broker.db.conn().await?;
    let mut queues = queue_metrics(&mut conn, THROUGHPUT_WINDOW_SECS).await?;
    if !tenant.is_default() {
        queues.retain(|q| q.tenant == tenant.as_str());
    }
    let queues = queues
        .into_iter()
        .map(|q| QueueGauges {
            tenant: q.tenant,
            queue: q.queue,
            depth: q.depth,
            lag_seconds: q.lag_seconds,
            throughput: q.throughput,
        })
        .collect();
    if tenant.is_default() {
        let (groups, dead) = every_tenant_groups(&mut conn).await?;
        let dead_letters = dead
            .as_object()
            .into_iter()
            .flatten()
            .map(|(t, n)| (t.clone(), n.as_i64().unwrap_or(0)))
            .collect();
        return Ok(FromDatabase {
            queues,
            groups,
            dead_letters,
        });
    }
    let mut groups = groups::list(&mut conn, tenant.as_str()).await?;
    for g in groups.as_array_mut().into_iter().flatten() {
        g["tenant"] = json!(tenant.as_str());
    }
    let overview = resources::overview(&mut conn, tenant.as_str()).await?;
    let dead = overview["messages"]["deadLetter"].as_i64().unwrap_or(0);
    Ok(FromDatabase {
        queues,
        groups,
        dead_letters: vec![(tenant.as_str().to_owned(), dead)],
    })
}

/// The JSON counters document (also served by `/api/v1/analytics/system-metrics`) as
/// `tenant` may see it: the whole node for the default tenant, only its own group actors
/// otherwise.
pub(crate) async fn snapshot(state: &AppState, tenant: &Tenant) -> Value {
    let broker = &state.broker;
    if !tenant.is_default() {
        return json!({
            "tenant": tenant.as_str(),
            "groups": broker.registry.stats(Some(tenant)).await,
        });
    }
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
        "workerCheckoutsTotal": stats.worker_checkouts.load(Ordering::Relaxed),
        "quarantined": stats.quarantined.load(Ordering::Relaxed),
    });
    body["groups"] = json!(broker.registry.stats(None).await);
    body["caches"] = json!({
        "groupActors": broker.registry.len(),
        "encryptedQueues": broker.encrypted_queues.len(),
    });
    body["hotlist"] = json!(broker.config.pop.hotlist);
    body["maintenance"] = json!(broker.in_maintenance());
    body["pushMaintenance"] = json!(broker.in_push_maintenance());
    body["spool"] = match &broker.spool {
        Some(spool) => spool.to_json(),
        None => crate::log::spool::Spool::off_json(),
    };
    body["mesh"] = broker.mesh.snapshot();
    body["ephemeral"] = broker.ephemeral.snapshot();
    body["retention"]["tables"] = table_sizes(state).await;
    body
}

/// Bytes of each table of the schema (heap, indexes and TOAST), so the sweeper's effect is
/// visible; `null` when the database does not answer (the rest is still served).
async fn table_sizes(state: &AppState) -> Value {
    let sizes = match state.broker.db.background_conn().await {
        Ok(mut conn) => crate::db::retention::table_sizes(&mut conn).await,
        Err(e) => Err(e),
    };
    match sizes {
        Ok(sizes) => Value::Object(
            sizes
                .into_iter()
                .map(|(table, bytes)| (table, json!(bytes)))
                .collect(),
        ),
        Err(error) => {
            warn!(error = %error, "table sizes left out of the metrics");
            Value::Null
        }
    }
}
