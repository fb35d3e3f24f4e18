//! Status and analytics (contract §4.5): dashboard documents the client passes through.
//!
//! What the numbers mean (all from the tables, see
//! `sql/functions/status_queue_rows_v1.sql`): `messages.total` is every message ever
//! appended; `pending`, `processing` and `completed` are relative to the queue-mode cursor;
//! `deadLetter` counts stored dead letters; `pushed` counts messages appended in the window
//! `[from, to]` (default: the last hour); `deadLettered` the dead letters filed in it;
//! `lagSeconds` the age of the oldest message queue mode has not passed. Acks leave no
//! history, so there is no "consumed per interval". The two `analytics/*-metrics` endpoints
//! describe this broker process now (its counters and its group actors); there is no stored
//! history of them either.

use actix_web::{web, HttpRequest, HttpResponse};
use chrono::{Duration, Utc};
use serde_json::json;
use tracing::instrument;

use super::{optional_timestamp, queue_name};
use crate::db::admin::status as db;
use crate::http::error::ApiError;
use crate::http::query::Query;
use crate::http::state::AppState;

/// The window when `from` is not given: the last hour.
const DEFAULT_WINDOW_SECS: i64 = 3600;

struct Filters {
    from: chrono::DateTime<Utc>,
    to: chrono::DateTime<Utc>,
    queue: Option<String>,
    namespace: Option<String>,
    task: Option<String>,
}

impl Filters {
    fn parse(query: &Query) -> Result<Self, ApiError> {
        let to = optional_timestamp(query, "to")?.unwrap_or_else(Utc::now);
        let from = optional_timestamp(query, "from")?
            .unwrap_or_else(|| to - Duration::seconds(DEFAULT_WINDOW_SECS));
        if from > to {
            return Err(ApiError::bad_request("from must not be after to"));
        }
        let queue = query.text("queue").map(queue_name).transpose()?;
        Ok(Filters {
            from,
            to,
            queue: queue.map(|q| q.as_str().to_owned()),
            namespace: query.text("namespace").map(str::to_owned),
            task: query.text("task").map(str::to_owned),
        })
    }

    fn window(&self) -> db::Window<'_> {
        db::Window {
            from: self.from,
            to: self.to,
            queue: self.queue.as_deref(),
            namespace: self.namespace.as_deref(),
            task: self.task.as_deref(),
        }
    }
}

/// `GET /api/v1/status?from=&to=&queue=&namespace=&task=`: totals over the matching queues.
#[instrument(skip_all)]
#[utoipa::path(
    get,
    path = "/api/v1/status",
    tag = "status",
    params(crate::http::openapi::params::StatusQuery),
    responses(
        (status = 200, description = "totals", body = Object),
        (status = 400, description = "bad input", body = crate::http::openapi::schemas::ErrorBody),
        (status = 500, description = "database or storage failure", body = crate::http::openapi::schemas::ErrorBody)
    )
)]
pub async fn status(
    state: web::Data<AppState>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let filters = Filters::parse(&Query::parse(req.query_string())?)?;
    let tenant = state.tenant(&req);
    let mut conn = state.broker.db.conn().await?;
    let body = db::status(&mut conn, tenant.as_str(), &filters.window()).await?;
    Ok(HttpResponse::Ok().json(body))
}

/// `GET /api/v1/status/queues?from=&to=&namespace=&task=&limit=&offset=`.
#[instrument(skip_all)]
#[utoipa::path(
    get,
    path = "/api/v1/status/queues",
    tag = "status",
    params(crate::http::openapi::params::StatusQueuesQuery),
    responses(
        (status = 200, description = "per queue", body = Object),
        (status = 400, description = "bad input", body = crate::http::openapi::schemas::ErrorBody),
        (status = 500, description = "database or storage failure", body = crate::http::openapi::schemas::ErrorBody)
    )
)]
pub async fn queues(
    state: web::Data<AppState>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let query = Query::parse(req.query_string())?;
    let filters = Filters::parse(&query)?;
    let limit = query.number("limit", 100, 1, 10_000)? as i32;
    let offset = query.number("offset", 0, 0, i32::MAX as u64)? as i32;
    let tenant = state.tenant(&req);
    let mut conn = state.broker.db.conn().await?;
    let body = db::queues(&mut conn, tenant.as_str(), &filters.window(), limit, offset).await?;
    Ok(HttpResponse::Ok().json(body))
}

/// `GET /api/v1/status/queues/{queue}`: 404 `{"error":"Queue not found"}` when unknown.
#[instrument(skip_all)]
#[utoipa::path(
    get,
    path = "/api/v1/status/queues/{queue}",
    tag = "status",
    params(crate::http::openapi::params::StatusQuery, ("queue" = String, Path, pattern = r"^[^/?#\u0000-\u001f\u007f-\u009f]+$", min_length = 1, description = "Queue name (at most 512 bytes)")),
    responses(
        (status = 200, description = "one queue", body = Object),
        (status = 400, description = "bad input", body = crate::http::openapi::schemas::ErrorBody),
        (status = 404, description = "Queue not found", body = crate::http::openapi::schemas::ErrorBody),
        (status = 500, description = "database or storage failure", body = crate::http::openapi::schemas::ErrorBody)
    )
)]
pub async fn queue(
    state: web::Data<AppState>,
    req: HttpRequest,
    path: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let queue = queue_name(&path.into_inner())?;
    let filters = Filters::parse(&Query::parse(req.query_string())?)?;
    let tenant = state.tenant(&req);
    let mut conn = state.broker.db.conn().await?;
    match db::queue(
        &mut conn,
        tenant.as_str(),
        queue.as_str(),
        &filters.window(),
    )
    .await?
    {
        Some(body) => Ok(HttpResponse::Ok().json(body)),
        None => Err(ApiError::NotFound("Queue not found".into())),
    }
}

/// `GET /api/v1/status/analytics?interval=hour|day|week|month&from=&to=&queue=&namespace=&task=`:
/// messages pushed and dead-lettered per bucket.
#[instrument(skip_all)]
#[utoipa::path(
    get,
    path = "/api/v1/status/analytics",
    tag = "status",
    params(crate::http::openapi::params::AnalyticsQuery),
    responses(
        (status = 200, description = "buckets", body = Object),
        (status = 400, description = "bad input", body = crate::http::openapi::schemas::ErrorBody),
        (status = 500, description = "database or storage failure", body = crate::http::openapi::schemas::ErrorBody)
    )
)]
pub async fn analytics(
    state: web::Data<AppState>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let query = Query::parse(req.query_string())?;
    let interval = match query.text("interval").unwrap_or("hour") {
        i @ ("hour" | "day" | "week" | "month") => i,
        other => {
            return Err(ApiError::bad_request(format!(
                "interval must be hour, day, week or month, got {other:?}"
            )))
        }
    };
    let filters = Filters::parse(&query)?;
    let tenant = state.tenant(&req);
    let mut conn = state.broker.db.conn().await?;
    let body = db::analytics(&mut conn, tenant.as_str(), interval, &filters.window()).await?;
    Ok(HttpResponse::Ok().json(body))
}

/// `GET /api/v1/analytics/system-metrics`: this process's counters now (the `/metrics`
/// document, the caller's tenant's view of it), stamped with its node id and the time.
#[instrument(skip_all)]
#[utoipa::path(
    get,
    path = "/api/v1/analytics/system-metrics",
    tag = "status",
    responses(
        (status = 200, description = "the /metrics document", body = Object),
        (status = 500, description = "database or storage failure", body = crate::http::openapi::schemas::ErrorBody)
    )
)]
pub async fn system_metrics(
    state: web::Data<AppState>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let snapshot = crate::http::metrics::snapshot(&state, &state.tenant(&req)).await;
    Ok(HttpResponse::Ok().json(json!({
        "nodeId": state.broker.mesh.snapshot()["nodeId"],
        "timestamp": super::iso(&Utc::now()),
        "metrics": snapshot,
    })))
}

/// `GET /api/v1/analytics/worker-metrics`: this process's live group actors (ring, wheel,
/// lent candidates, parked pops per queue and group): the caller's tenant's, or every
/// tenant's for the default tenant.
#[instrument(skip_all)]
#[utoipa::path(
    get,
    path = "/api/v1/analytics/worker-metrics",
    tag = "status",
    responses(
        (status = 200, description = "group actors", body = Object),
        (status = 500, description = "database or storage failure", body = crate::http::openapi::schemas::ErrorBody)
    )
)]
pub async fn worker_metrics(
    state: web::Data<AppState>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let tenant = state.tenant(&req);
    let groups = state
        .broker
        .registry
        .stats(crate::http::metrics::tenant_filter(&tenant))
        .await;
    Ok(HttpResponse::Ok().json(json!({
        "nodeId": state.broker.mesh.snapshot()["nodeId"],
        "timestamp": super::iso(&Utc::now()),
        "workers": groups,
    })))
}

/// `POST /api/v1/stats/refresh` (no body): every number of these endpoints is computed when
/// it is read, so there is nothing to refresh; answers `{success: true, refreshed: false}`
/// so the client's call succeeds.
#[instrument(skip_all)]
#[utoipa::path(
    post,
    path = "/api/v1/stats/refresh",
    tag = "status",
    responses((status = 200, description = "accepted", body = Object))
)]
pub async fn refresh_stats() -> HttpResponse {
    HttpResponse::Ok().json(json!({
        "success": true,
        "refreshed": false,
        "message": "statistics are computed on read; nothing to refresh",
    }))
}
