//! `GET /api/v1/timers/{queue}?after=&limit=`: a keyset page of one queue's pending
//! timers in key (byte) order, `after` exclusive, `limit` clamped to 1..=1000 (default
//! 100), never refused: `{rows, truncated, nextAfter}`. Per queue only: the queue is a
//! path segment so no call scans a whole tenant.

use actix_web::{web, HttpRequest, HttpResponse};

use super::refused;
use crate::db::kv::KvApplyError;
use crate::db::timers;
use crate::domain::timers::limits::{LIST_LIMIT_DEFAULT, LIST_LIMIT_MAX};
use crate::domain::timers::parse::check_key;
use crate::domain::QueueName;
use crate::http::kv::call;
use crate::http::kv::error::KvError;
use crate::http::query::Query;
use crate::http::state::AppState;

/// The handler.
#[utoipa::path(
    get,
    path = "/api/v1/timers/{queue}",
    tag = "timers",
    params(("queue" = String, Path), ("after" = Option<String>, Query, description = "exclusive key cursor"), ("limit" = Option<i64>, Query, description = "rows, clamped to 1..=1000, default 100")),
    responses(
        (status = 200, description = "`{rows: [{queue, timerKey, partition, txn, messageId, deliverAt, attempts}], truncated, nextAfter}`", body = Object),
        (status = 400, description = "a malformed queue or cursor", body = crate::http::openapi::kv_schemas::KvErrorBody),
        (status = 429, description = "`overloaded`; `Retry-After`", body = crate::http::openapi::kv_schemas::KvErrorBody)
    )
)]
pub async fn list(
    state: web::Data<AppState>,
    req: HttpRequest,
    path: web::Path<String>,
) -> Result<HttpResponse, KvError> {
    let queue = QueueName::parse(path.into_inner())
        .map_err(|e| KvError::bad_request("queue", format!("queue: {e}")))?;
    let query = Query::parse(req.query_string())
        .map_err(|e| KvError::bad_request("query", e.to_string()))?;
    let after = query.text("after").unwrap_or_default();
    if !after.is_empty() {
        check_key(after, "after").map_err(refused)?;
    }
    let limit = match query.text("limit") {
        None => LIST_LIMIT_DEFAULT,
        Some(text) => text
            .parse::<i64>()
            .map(|n| n.clamp(1, LIST_LIMIT_MAX))
            .unwrap_or(LIST_LIMIT_DEFAULT),
    };
    let tenant = state.tenant(&req);
    let (_permit, mut conn) = call::connection(&state).await?;
    let page = timers::list(&mut conn, tenant.as_str(), queue.as_str(), after, limit)
        .await
        .map_err(KvApplyError::NotApplied)?;
    Ok(HttpResponse::Ok().json(page))
}
