//! `POST /api/v1/timers`: `{"operations": [op, ...]}` in, `{"results": [...]}` out,
//! index-aligned. The whole call is checked before anything runs (a 400 changes nothing)
//! and then applied in one statement, `queen.timers_apply_v1`, which is one transaction.
//! After it, this node's fire loop hears of the earliest timer it scheduled.

use actix_web::{web, HttpRequest, HttpResponse};

use super::refused;
use crate::db::timers::apply;
use crate::domain::timers::parse_ops;
use crate::http::kv::call;
use crate::http::kv::error::KvError;
use crate::http::state::AppState;

/// The handler.
#[utoipa::path(
    post,
    path = "/api/v1/timers",
    tag = "timers",
    request_body = crate::http::openapi::timers_schemas::TimersBody,
    responses(
        (status = 200, description = "`{results: [...]}`, one per op in order: `ok, status (scheduled | rescheduled | cancelled | absent | too_late), queue, timerKey, txn`, plus `messageId, deliverAt` for a schedule", body = Object),
        (status = 400, description = "a malformed call, a server-owned field, more than 256 ops, one key twice; nothing applied", body = crate::http::openapi::kv_schemas::KvErrorBody),
        (status = 403, description = "without the read-write role; nothing applied", body = crate::http::openapi::kv_schemas::KvErrorBody),
        (status = 429, description = "`overloaded`: as many database calls in flight as the broker allows; nothing applied; `Retry-After`", body = crate::http::openapi::kv_schemas::KvErrorBody),
        (status = 503, description = "the database could not take the call; nothing applied; `Retry-After`", body = crate::http::openapi::kv_schemas::KvErrorBody)
    )
)]
pub async fn timers(
    state: web::Data<AppState>,
    req: HttpRequest,
    payload: web::Payload,
) -> Result<HttpResponse, KvError> {
    let operations = call::operations(&state, payload, "operations").await?;
    let batch = parse_ops(&operations).map_err(refused)?;
    if !state.can_write(&req) {
        return Err(KvError::read_only("timers need the read-write role"));
    }
    if batch.ops.is_empty() {
        return Ok(call::nothing());
    }
    let tenant = state.tenant(&req);
    let (_permit, mut conn) = call::connection(&state).await?;
    let answer = apply(&mut conn, tenant.as_str(), &batch).await?;
    drop(conn);
    if let Some(delay_ms) = batch.earliest_delay_ms() {
        state.broker.timers.due_in(delay_ms);
    }
    Ok(call::answer(answer))
}
