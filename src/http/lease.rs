//! `POST /api/v1/lease/{lease_id}/extend`: renew every partition claimed under a lease.
//! The published client sends no body; `{"seconds": N}` is accepted too. HTTP 200 either way.
//! Only the caller's tenant's leases are renewed: another tenant's lease id is "not found".

use actix_web::{web, HttpRequest, HttpResponse};
use serde_json::{json, Value};

use super::body::read_body;
use super::error::ApiError;
use super::state::AppState;
use crate::db::lease::extend as extend_lease;

/// Longest accepted extension (one day).
const MAX_EXTEND_SECONDS: i64 = 86_400;

/// The handler.
#[utoipa::path(
    post,
    path = "/api/v1/lease/{lease_id}/extend",
    tag = "messages",
    params(("lease_id" = String, Path, min_length = 1, description = "Lease id, as a pop answers it")),
    responses(
        (status = 200, description = "renewed", body = Object),
        (status = 400, description = "bad input", body = crate::http::openapi::schemas::ErrorBody),
        (status = 500, description = "database or storage failure", body = crate::http::openapi::schemas::ErrorBody)
    )
)]
pub async fn extend(
    state: web::Data<AppState>,
    req: HttpRequest,
    path: web::Path<String>,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    let lease_id = path.into_inner();
    let body = read_body(payload, state.broker.config.http.max_body_bytes).await?;
    let seconds = requested_seconds(&body)?;
    let tenant = state.tenant(&req);
    let mut conn = state.broker.db.conn().await?;
    let (renewed, expires_at) =
        extend_lease(&mut conn, tenant.as_str(), &lease_id, seconds).await?;
    let expires = expires_at.map(|t| t.format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string());
    let success = renewed > 0;
    Ok(HttpResponse::Ok().json(json!({
        "leaseId": lease_id,
        "success": success,
        "renewed": renewed,
        "newExpiresAt": expires,
        "expiresAt": expires,
        "lease_expires_at": expires,
        "error": if success { Value::Null } else { json!("Lease not found or expired") },
    })))
}

fn requested_seconds(body: &[u8]) -> Result<Option<i32>, ApiError> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(None);
    }
    let value: Value = serde_json::from_slice(body)
        .map_err(|e| ApiError::bad_request(format!("invalid JSON body: {e}")))?;
    match value.get("seconds") {
        None | Some(Value::Null) => Ok(None),
        Some(v) => v
            .as_i64()
            .filter(|s| (1..=MAX_EXTEND_SECONDS).contains(s))
            .map(|s| Some(s as i32))
            .ok_or_else(|| {
                ApiError::bad_request(format!(
                    "seconds must be a whole number between 1 and {MAX_EXTEND_SECONDS}"
                ))
            }),
    }
}
