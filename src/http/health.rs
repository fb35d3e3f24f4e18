//! `GET /health`: 200 when the database answers and the schema is in place, 503 otherwise.

use actix_web::{web, HttpResponse};
use serde_json::json;
use tracing::warn;

use super::AppState;
use crate::db::queues::ping;

/// The handler.
pub async fn health(state: web::Data<AppState>) -> HttpResponse {
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
