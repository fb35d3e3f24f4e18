//! `GET /metrics`: the broker's counters as JSON (pops, SQL calls, wakes, parked pops, the
//! limiter and the pool).

use std::sync::atomic::Ordering;

use actix_web::{web, HttpResponse};
use serde_json::json;

use super::AppState;

/// The handler.
pub async fn metrics(state: web::Data<AppState>) -> HttpResponse {
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
    HttpResponse::Ok().json(body)
}
