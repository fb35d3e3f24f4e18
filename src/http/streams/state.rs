//! `POST /streams/v1/state/get`: the state rows of one (query, partition), filtered by
//! `keys`, a literal `key_prefix` and `ripe_at_or_before` (`value.windowEnd`).

use actix_web::{web, HttpRequest, HttpResponse};

use crate::db::streams::state_get;
use crate::domain::streams::parse_state_query;
use crate::http::error::ApiError;
use crate::http::state::AppState;

/// The handler.
#[utoipa::path(
    post,
    path = "/streams/v1/state/get",
    tag = "streams",
    request_body = crate::http::openapi::streams_schemas::StateGetBody,
    responses(
        (status = 200, description = "`{success: true, rows: [{key, value}]}` in key order", body = Object),
        (status = 400, description = "a malformed call", body = crate::http::openapi::schemas::ErrorBody),
        (status = 404, description = "no such query for this tenant", body = crate::http::openapi::schemas::ErrorBody)
    )
)]
pub async fn state_get_route(
    state: web::Data<AppState>,
    req: HttpRequest,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    let query = parse_state_query(&super::body(&state, payload).await?)?;
    let tenant = state.tenant(&req);
    let mut conn = state.broker.db.conn().await?;
    match state_get(&mut conn, tenant.as_str(), &query).await? {
        Some(json) => Ok(HttpResponse::Ok()
            .content_type("application/json")
            .body(json)),
        None => Err(ApiError::NotFound(format!(
            "no such streams query: {}",
            query.query_id
        ))),
    }
}
