//! `POST /api/v1/kv`: `{"operations": [op, ...]}` in, `{"results": [...]}` out,
//! index-aligned. The whole batch is checked before anything runs (a 4xx changes nothing)
//! and then applied in one statement, `queen.kv_apply_v1`, which is one transaction: ops in
//! order, reads seeing the batch's earlier writes, verdicts as 200 fields. A lone `get` or
//! unconditional `put` takes a plain statement of its own (`db/kv_single.rs`).

use actix_web::{web, HttpRequest, HttpResponse};

use super::call;
use super::error::KvError;
use crate::db::kv::apply;
use crate::db::kv_single;
use crate::domain::kv::parse_ops;
use crate::http::state::AppState;

/// The handler.
#[utoipa::path(
    post,
    path = "/api/v1/kv",
    tag = "kv",
    request_body = crate::http::openapi::kv_schemas::KvBody,
    responses(
        (status = 200, description = "`{results: [...]}`, one result per op in order (get: `found, key, value, version, expiresAt, updatedAt`; getMany: `rows, missing, truncated`; getPrefix: `rows, truncated, nextAfter`; writes and check: `applied, key, value, version, reason?: exists | absent | version | limit | type`); or, when an op with `required: true` lost, `{ok: false, reason: kv_precondition, failedIndex, kvReason, version, value}` with nothing applied", body = Object),
        (status = 400, description = "a malformed call; nothing applied", body = crate::http::openapi::kv_schemas::KvErrorBody),
        (status = 403, description = "a write without the read-write role; nothing applied", body = crate::http::openapi::kv_schemas::KvErrorBody),
        (status = 409, description = "`kv_outcome_unknown`: the connection broke after the call was sent", body = crate::http::openapi::kv_schemas::KvErrorBody),
        (status = 413, description = "over a size bound (256 ops, 1024 keys, 512-byte keys, 64 KiB values); nothing applied", body = crate::http::openapi::kv_schemas::KvErrorBody),
        (status = 429, description = "`overloaded`: as many database calls in flight as the broker allows; nothing applied; `Retry-After`", body = crate::http::openapi::kv_schemas::KvErrorBody),
        (status = 503, description = "the database could not take the call; nothing applied; `Retry-After`", body = crate::http::openapi::kv_schemas::KvErrorBody)
    )
)]
pub async fn kv(
    state: web::Data<AppState>,
    req: HttpRequest,
    payload: web::Payload,
) -> Result<HttpResponse, KvError> {
    let operations = call::operations(&state, payload, "operations").await?;
    let batch = parse_ops(&operations)?;
    if batch.writes() && !state.can_write(&req) {
        return Err(KvError::read_only(
            "this call writes keys: that needs the read-write role",
        ));
    }
    if batch.ops.is_empty() {
        return Ok(call::nothing());
    }
    let tenant = state.tenant(&req);
    let (_permit, mut conn) = call::connection(&state).await?;
    let answer = match kv_single::apply(&mut conn, tenant.as_str(), &batch).await {
        Some(single) => single?,
        None => apply(&mut conn, tenant.as_str(), &batch).await?,
    };
    Ok(call::answer(answer))
}
