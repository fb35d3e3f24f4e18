//! One timer key: `GET /api/v1/timers/{queue}/{timerKey...}` (peek; a miss is 200
//! `{found: false}`) and `DELETE` of the same path (cancel, through
//! `queen.timers_apply_v1` like a `POST` cancel; `?txn=` is echoed on `absent`). The key is
//! the path's whole tail, so it may hold `/`.

use actix_web::{web, HttpRequest, HttpResponse};

use super::refused;
use crate::db::kv::KvApplyError;
use crate::db::timers;
use crate::domain::timers::parse::queue_and_key;
use crate::domain::timers::{TimerBatch, TimerOp};
use crate::http::kv::call;
use crate::http::kv::error::KvError;
use crate::http::query::Query;
use crate::http::state::AppState;

/// The peek handler.
#[utoipa::path(
    get,
    path = "/api/v1/timers/{queue}/{timerKey}",
    tag = "timers",
    params(("queue" = String, Path), ("timerKey" = String, Path, description = "the rest of the path: a key may hold `/`")),
    responses(
        (status = 200, description = "`{found: true, queue, timerKey, partition, payload (base64), encrypted, txn, messageId, deliverAt, attempts}` or `{found: false}`", body = Object),
        (status = 400, description = "a malformed queue or key", body = crate::http::openapi::kv_schemas::KvErrorBody),
        (status = 429, description = "`overloaded`; `Retry-After`", body = crate::http::openapi::kv_schemas::KvErrorBody)
    )
)]
pub async fn peek(
    state: web::Data<AppState>,
    req: HttpRequest,
    path: web::Path<(String, String)>,
) -> Result<HttpResponse, KvError> {
    let (queue, key) = path.into_inner();
    let (queue, key) = queue_and_key(&queue, &key).map_err(refused)?;
    let tenant = state.tenant(&req);
    let (_permit, mut conn) = call::connection(&state).await?;
    let found = timers::peek(&mut conn, tenant.as_str(), queue.as_str(), &key)
        .await
        .map_err(KvApplyError::NotApplied)?;
    Ok(HttpResponse::Ok().json(found))
}

/// The cancel handler.
#[utoipa::path(
    delete,
    path = "/api/v1/timers/{queue}/{timerKey}",
    tag = "timers",
    params(("queue" = String, Path), ("timerKey" = String, Path, description = "the rest of the path: a key may hold `/`"), ("txn" = Option<String>, Query, description = "echoed on `absent`")),
    responses(
        (status = 200, description = "one result: `ok, status (cancelled | absent | too_late), queue, timerKey, txn`", body = Object),
        (status = 400, description = "a malformed queue, key or txn", body = crate::http::openapi::kv_schemas::KvErrorBody),
        (status = 403, description = "without the read-write role", body = crate::http::openapi::kv_schemas::KvErrorBody),
        (status = 429, description = "`overloaded`; `Retry-After`", body = crate::http::openapi::kv_schemas::KvErrorBody)
    )
)]
pub async fn cancel(
    state: web::Data<AppState>,
    req: HttpRequest,
    path: web::Path<(String, String)>,
) -> Result<HttpResponse, KvError> {
    let (queue, key) = path.into_inner();
    let (queue, key) = queue_and_key(&queue, &key).map_err(refused)?;
    let query = Query::parse(req.query_string())
        .map_err(|e| KvError::bad_request("query", e.to_string()))?;
    let txn = query.text("txn").map(str::to_owned);
    if txn.as_ref().is_some_and(|t| t.len() > 256) {
        return Err(KvError::bad_request("txn", "txn is at most 256 bytes"));
    }
    if !state.can_write(&req) {
        return Err(KvError::read_only("a cancel needs the read-write role"));
    }
    let batch = TimerBatch {
        ops: vec![TimerOp::cancel(queue, key, txn)],
    };
    let tenant = state.tenant(&req);
    let (_permit, mut conn) = call::connection(&state).await?;
    let answer = timers::apply(&mut conn, tenant.as_str(), &batch).await?;
    let mut answer: serde_json::Value = serde_json::from_str(&answer)
        .map_err(|_| KvApplyError::Unreadable("timers_apply_v1 answered no JSON"))?;
    match answer.get_mut("results").and_then(|r| r.get_mut(0)) {
        Some(one) => Ok(HttpResponse::Ok().json(one.take())),
        None => Err(KvApplyError::Unreadable("timers_apply_v1 answered no result").into()),
    }
}
