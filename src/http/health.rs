//! Health: `GET /health` and `GET /health/ready` answer 200 when the database answers and
//! the schema is in place (HTTP only starts after the schema is applied), 503 otherwise or
//! once the broker is draining; `GET /health/live` answers 200 while the process serves,
//! whatever the database does, so an outage does not get every node restarted.

use actix_web::{web, HttpResponse};
use serde_json::json;
use tracing::warn;

use super::state::AppState;
use crate::db::queues::ping;

/// `GET /health/live`: the process serves requests.
#[utoipa::path(
    get,
    path = "/health/live",
    tag = "health",
    responses((status = 200, description = "the process serves", body = Object))
)]
pub async fn live() -> HttpResponse {
    HttpResponse::Ok().json(json!({ "status": "alive", "server": "queen" }))
}

/// `GET /health` and `GET /health/ready`: the node can take work.
#[utoipa::path(
    get,
    path = "/health",
    tag = "health",
    responses(
        (status = 200, description = "the database answers", body = Object),
        (status = 503, description = "database down or node stopping", body = Object)
    )
)]
pub async fn health(state: web::Data<AppState>) -> HttpResponse {
    if state.broker.is_draining() {
        return HttpResponse::ServiceUnavailable().json(json!({
            "status": "draining",
            "server": "queen",
            "version": env!("CARGO_PKG_VERSION"),
        }));
    }
    let result = match state.broker.db.conn().await {
        Ok(mut conn) => ping(&mut conn).await,
        Err(e) => Err(e),
    };
    let (connections, idle) = state.broker.db.state();
    match result {
        Ok(()) => HttpResponse::Ok().json(json!({
            "status": "healthy",
            "database": "connected",
            "server": "queen",
            "version": env!("CARGO_PKG_VERSION"),
            "pool": { "connections": connections, "idle": idle },
        })),
        Err(error) => {
            warn!(error = %error, "health check failed");
            HttpResponse::ServiceUnavailable().json(json!({
                "status": "unhealthy",
                "database": "disconnected",
                "server": "queen",
                "version": env!("CARGO_PKG_VERSION"),
                "error": "database connection error",
            }))
        }
    }
}
