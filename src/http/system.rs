//! `GET|POST /api/v1/system/maintenance`: pop maintenance mode, shared through the database
//! so every node agrees within a second. Body `{"pop": true|false}` (`enabled` is accepted
//! as a synonym).

use std::sync::atomic::Ordering;

use actix_web::{web, HttpResponse};
use serde_json::{json, Value};

use super::{parse_json, read_body, ApiError, AppState};
use crate::db::system;

/// Reads the switch as this node sees it.
#[utoipa::path(
    get,
    path = "/api/v1/system/maintenance",
    tag = "system",
    responses((status = 200, description = "the switch", body = Object))
)]
pub async fn get_maintenance(state: web::Data<AppState>) -> HttpResponse {
    HttpResponse::Ok().json(json!({ "pop": state.broker.in_maintenance() }))
}

/// Sets the switch for every node.
#[utoipa::path(
    method(post, put),
    path = "/api/v1/system/maintenance",
    tag = "system",
    request_body = crate::http::openapi::schemas::MaintenanceBody,
    responses(
        (status = 200, description = "the switch as stored", body = Object),
        (status = 400, description = "bad input", body = crate::http::openapi::schemas::ErrorBody),
        (status = 500, description = "database or storage failure", body = crate::http::openapi::schemas::ErrorBody)
    )
)]
pub async fn set_maintenance(
    state: web::Data<AppState>,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    let body = read_body(payload, state.broker.config.http.max_body_bytes).await?;
    let value: Value = parse_json(&body)?;
    let on = value
        .get("pop")
        .or_else(|| value.get("enabled"))
        .and_then(Value::as_bool)
        .ok_or_else(|| ApiError::bad_request("body must be {\"pop\": true|false}"))?;
    let mut conn = state.broker.db.conn().await?;
    let stored = system::set_maintenance(&mut conn, on).await?;
    state.broker.maintenance.store(stored, Ordering::Relaxed);
    // Peers re-read the switch within a refresh interval anyway; the hint makes it now.
    state.broker.mesh.maintenance_changed(stored);
    Ok(HttpResponse::Ok().json(json!({ "pop": stored })))
}
