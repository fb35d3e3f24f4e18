//! `GET|POST /api/v1/system/maintenance`: the maintenance switches, shared through the
//! database so every node agrees within a second. Body `{"pop": true|false}` (`enabled` is
//! accepted as a synonym) and/or `{"push": true|false}` (pushes go to each node's spool,
//! answered `buffered`; turning it off replays the spools). Switching is the default
//! tenant's (the operator's) alone: it stops every tenant.

use actix_web::{web, HttpRequest, HttpResponse};
use serde_json::{json, Value};

use super::body::{parse_json, read_body};
use super::error::ApiError;
use super::state::AppState;
use crate::db::system;

/// Reads the switch as this node sees it.
#[utoipa::path(
    get,
    path = "/api/v1/system/maintenance",
    tag = "system",
    responses((status = 200, description = "the switch", body = Object))
)]
pub async fn get_maintenance(state: web::Data<AppState>) -> HttpResponse {
    HttpResponse::Ok().json(json!({
        "pop": state.broker.in_maintenance(),
        "push": state.broker.in_push_maintenance(),
    }))
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
    req: HttpRequest,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    // Maintenance stops every tenant's pops or pushes: the operator's switch, never one
    // tenant's over the others.
    if !state.tenant(&req).is_default() {
        return Err(ApiError::Forbidden(
            "maintenance mode is switched by the default tenant only".to_owned(),
        ));
    }
    let body = read_body(payload, state.broker.config.http.max_body_bytes).await?;
    let value: Value = parse_json(&body)?;
    const SHAPE: &str = "body must be {\"pop\": true|false} and/or {\"push\": true|false}";
    let switch = |key: &str| match value.get(key) {
        None => Ok(None),
        Some(Value::Bool(on)) => Ok(Some(*on)),
        Some(_) => Err(ApiError::bad_request(format!(
            "{key} must be true or false"
        ))),
    };
    let pop = match switch("pop")? {
        Some(on) => Some(on),
        None => switch("enabled")?,
    };
    let push = switch("push")?;
    if pop.is_none() && push.is_none() {
        return Err(ApiError::bad_request(SHAPE));
    }
    let broker = &state.broker;
    let mut conn = broker.db.conn().await?;
    if let Some(on) = pop {
        let stored = system::set_maintenance(&mut conn, on).await?;
        broker.change_maintenance(Some(stored), None);
        // Peers re-read the switch within a refresh interval anyway; the hint makes it now.
        broker.mesh.maintenance_changed(stored);
    }
    if let Some(on) = push {
        let stored = system::set_push_maintenance(&mut conn, on).await?;
        // Peers follow within a refresh interval (no mesh hint: a push that reaches the
        // database meanwhile is simply stored, in order).
        broker.change_maintenance(None, Some(stored));
    }
    Ok(HttpResponse::Ok().json(json!({
        "pop": broker.in_maintenance(),
        "push": broker.in_push_maintenance(),
    })))
}
