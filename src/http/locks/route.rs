//! `POST /api/v1/locks`: `{"operations": [op, ...]}` in, `{"results": [...]}` out,
//! index-aligned. The whole call is checked before anything runs (a 400 changes nothing)
//! and then applied in one statement, `queen.locks_apply_v1`; its ops are independent
//! (one refused op undoes nothing) and their verdicts are 200 fields.

use actix_web::{web, HttpRequest, HttpResponse};

use crate::db::locks::apply;
use crate::domain::locks::parse_ops;
use crate::http::kv::call;
use crate::http::kv::error::KvError;
use crate::http::state::AppState;

/// The handler.
#[utoipa::path(
    post,
    path = "/api/v1/locks",
    tag = "locks",
    request_body = crate::http::openapi::locks_schemas::LocksBody,
    responses(
        (status = 200, description = "`{results: [...]}`, one result per op in order. acquire: `acquired: true, slot, token, owner, guard, already?` or `acquired: false, reason: held | contended, holders: [{slot, owner}]`; renew: `renewed: true, slot, token (new), guard` or `renewed: false, reason: lost, holders`; release: `released` and `reason: lost` when false; get: `held, holders: [{slot, owner, token, since, expiresAt, renewedAt}]`. `guard` is the KV op `{op: check, ns: queen-locks, key: <name>#<slot>, expect: token, required: true}`", body = Object),
        (status = 400, description = "a malformed call (`locks_bad_name`, `locks_ttl_required`, `locks_bad_token`, `locks_unknown_op`, `locks_duplicate_in_call`, ...); nothing applied", body = crate::http::openapi::kv_schemas::KvErrorBody),
        (status = 403, description = "an acquire, renew or release without the read-write role; nothing applied", body = crate::http::openapi::kv_schemas::KvErrorBody),
        (status = 409, description = "`kv_outcome_unknown`: the connection broke after the call was sent", body = crate::http::openapi::kv_schemas::KvErrorBody),
        (status = 429, description = "`overloaded`: as many database calls in flight as the broker allows; nothing applied; `Retry-After`", body = crate::http::openapi::kv_schemas::KvErrorBody),
        (status = 503, description = "the database could not take the call; nothing applied; `Retry-After`", body = crate::http::openapi::kv_schemas::KvErrorBody)
    )
)]
pub async fn locks(
    state: web::Data<AppState>,
    req: HttpRequest,
    payload: web::Payload,
) -> Result<HttpResponse, KvError> {
    let operations = call::operations(&state, payload, "locks_operations").await?;
    let batch = parse_ops(&operations)?;
    if batch.writes() && !state.can_write(&req) {
        return Err(KvError::read_only(
            "acquire, renew and release need the read-write role; get needs read-only",
        ));
    }
    if batch.ops.is_empty() {
        return Ok(call::nothing());
    }
    let tenant = state.tenant(&req);
    let (_permit, mut conn) = call::connection(&state).await?;
    Ok(call::answer(
        apply(&mut conn, tenant.as_str(), &batch).await?,
    ))
}
