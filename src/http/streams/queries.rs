//! `POST /streams/v1/queries`: register a query by name. A new name answers `fresh:
//! true`; the same config hash again `fresh: false`; another hash a 409 (nothing
//! changed) unless `reset`, which wipes the query's state and records the new hash.

use actix_web::{web, HttpRequest, HttpResponse};
use serde_json::json;

use crate::db::streams::register;
use crate::domain::streams::parse_registration;
use crate::http::error::ApiError;
use crate::http::state::AppState;

/// The handler.
#[utoipa::path(
    post,
    path = "/streams/v1/queries",
    tag = "streams",
    request_body = crate::http::openapi::streams_schemas::RegisterBody,
    responses(
        (status = 200, description = "`{success: true, query_id, name, fresh, reset}`: `query_id` is the server's id for every later call", body = Object),
        (status = 400, description = "a malformed call; nothing changed", body = crate::http::openapi::schemas::ErrorBody),
        (status = 409, description = "the name is registered with another config hash and `reset` is false; nothing changed", body = crate::http::openapi::schemas::ErrorBody)
    )
)]
pub async fn queries(
    state: web::Data<AppState>,
    req: HttpRequest,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    let registration = parse_registration(&super::body(&state, payload).await?)?;
    let tenant = state.tenant(&req);
    let mut conn = state.broker.db.conn().await?;
    let answer = register(&mut conn, tenant.as_str(), &registration).await?;
    if answer["ok"] != json!(true) {
        return Err(ApiError::Conflict(format!(
            "config_hash mismatch for query {}: registered {}, given {}",
            registration.name,
            answer["registered"].as_str().unwrap_or("?"),
            registration.config_hash
        )));
    }
    Ok(HttpResponse::Ok().json(json!({
        "success": true,
        "query_id": answer["query_id"],
        "name": registration.name,
        "fresh": answer["fresh"],
        "reset": answer["reset"],
    })))
}
