//! Resources (contract §4.4, decision 9.6): overview, queues, one queue, queue depth,
//! partitions, namespaces, tasks, and queue deletion.
//!
//! Message counts are relative to the queue-mode cursor (see
//! `sql/functions/partition_stats_v1.sql`): `total` is every message ever appended,
//! `pending` what a queue-mode consumer has not received, `processing` what sits in a live
//! queue-mode lease. The depth endpoint counts against a named group's cursor, or, when no
//! group is named, the cursor furthest behind among queue mode (from -1 where it never
//! popped) and every group.

use actix_web::{web, HttpRequest, HttpResponse};
use serde_json::json;
use tracing::{info, instrument};

use super::{group_name, queue_name};
use crate::db::admin::resources as db;
use crate::http::error::ApiError;
use crate::http::query::Query;
use crate::http::state::AppState;

/// Default page size of the listings.
const DEFAULT_LIMIT: u64 = 100;
/// Largest page of the listings.
const MAX_LIMIT: u64 = 10_000;

fn page(query: &Query) -> Result<(i32, i32), ApiError> {
    let limit = query.number("limit", DEFAULT_LIMIT, 1, MAX_LIMIT)? as i32;
    let offset = query.number("offset", 0, 0, i32::MAX as u64)? as i32;
    Ok((limit, offset))
}

fn queue_not_found() -> ApiError {
    ApiError::NotFound("Queue not found".into())
}

/// `GET /api/v1/resources/overview`.
#[instrument(skip_all)]
#[utoipa::path(
    get,
    path = "/api/v1/resources/overview",
    tag = "resources",
    responses(
        (status = 200, description = "counts", body = Object),
        (status = 500, description = "database or storage failure", body = crate::http::openapi::schemas::ErrorBody)
    )
)]
pub async fn overview(
    state: web::Data<AppState>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let tenant = state.tenant(&req);
    let mut conn = state.broker.db.conn().await?;
    Ok(HttpResponse::Ok().json(db::overview(&mut conn, tenant.as_str()).await?))
}

/// `GET /api/v1/resources/queues?search=&limit=&offset=`.
#[instrument(skip_all)]
#[utoipa::path(
    get,
    path = "/api/v1/resources/queues",
    tag = "resources",
    params(crate::http::openapi::params::QueuesQuery),
    responses(
        (status = 200, description = "queues", body = Object),
        (status = 400, description = "bad input", body = crate::http::openapi::schemas::ErrorBody),
        (status = 500, description = "database or storage failure", body = crate::http::openapi::schemas::ErrorBody)
    )
)]
pub async fn queues(
    state: web::Data<AppState>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let query = Query::parse(req.query_string())?;
    let (limit, offset) = page(&query)?;
    let search = query.text("search");
    let tenant = state.tenant(&req);
    let mut conn = state.broker.db.conn().await?;
    let body = db::queues(&mut conn, tenant.as_str(), search, limit, offset).await?;
    Ok(HttpResponse::Ok().json(body))
}

/// `GET /api/v1/resources/queues/{queue}`: 404 `{"error":"Queue not found"}` when unknown.
#[instrument(skip_all)]
#[utoipa::path(
    get,
    path = "/api/v1/resources/queues/{queue}",
    tag = "resources",
    params(("queue" = String, Path, pattern = r"^[^/?#\u0000-\u001f\u007f-\u009f]+$", min_length = 1, description = "Queue name (at most 512 bytes)")),
    responses(
        (status = 200, description = "the queue", body = Object),
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
    let tenant = state.tenant(&req);
    let mut conn = state.broker.db.conn().await?;
    match db::queue(&mut conn, tenant.as_str(), queue.as_str()).await? {
        Some(body) => Ok(HttpResponse::Ok().json(body)),
        None => Err(queue_not_found()),
    }
}

/// `GET /api/v1/resources/queues/{queue}/depth?group=`.
#[instrument(skip_all)]
#[utoipa::path(
    get,
    path = "/api/v1/resources/queues/{queue}/depth",
    tag = "resources",
    params(crate::http::openapi::params::DepthQuery, ("queue" = String, Path, pattern = r"^[^/?#\u0000-\u001f\u007f-\u009f]+$", min_length = 1, description = "Queue name (at most 512 bytes)")),
    responses(
        (status = 200, description = "pending per partition", body = Object),
        (status = 400, description = "bad input", body = crate::http::openapi::schemas::ErrorBody),
        (status = 404, description = "Queue not found", body = crate::http::openapi::schemas::ErrorBody),
        (status = 500, description = "database or storage failure", body = crate::http::openapi::schemas::ErrorBody)
    )
)]
pub async fn depth(
    state: web::Data<AppState>,
    req: HttpRequest,
    path: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let queue = queue_name(&path.into_inner())?;
    let query = Query::parse(req.query_string())?;
    let group = query.text("group").map(group_name).transpose()?;
    let tenant = state.tenant(&req);
    let mut conn = state.broker.db.conn().await?;
    let group = group.as_ref().map(|g| g.as_str());
    match db::depth(&mut conn, tenant.as_str(), queue.as_str(), group).await? {
        Some(body) => Ok(HttpResponse::Ok().json(body)),
        None => Err(queue_not_found()),
    }
}

/// `DELETE /api/v1/resources/queues/{queue}`: `{deleted: true, queue, existed}`. Removes
/// partitions, segments, dedup rows, cursors, subscriptions and dead letters; the local
/// group actors and the peers hear that the queue changed.
#[instrument(skip_all)]
#[utoipa::path(
    delete,
    path = "/api/v1/resources/queues/{queue}",
    tag = "resources",
    params(("queue" = String, Path, pattern = r"^[^/?#\u0000-\u001f\u007f-\u009f]+$", min_length = 1, description = "Queue name (at most 512 bytes)")),
    responses(
        (status = 200, description = "{deleted, queue, existed}", body = Object),
        (status = 400, description = "bad input", body = crate::http::openapi::schemas::ErrorBody),
        (status = 500, description = "database or storage failure", body = crate::http::openapi::schemas::ErrorBody)
    )
)]
pub async fn delete_queue(
    state: web::Data<AppState>,
    req: HttpRequest,
    path: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let queue = queue_name(&path.into_inner())?;
    let tenant = state.tenant(&req);
    let mut conn = state.broker.db.conn().await?;
    let existed = db::delete_queue(&mut conn, tenant.as_str(), queue.as_str()).await?;
    drop(conn);
    state.broker.registry.config_changed(&tenant, &queue);
    state.broker.mesh.config_changed(&tenant, &queue);
    info!(queue = queue.as_str(), existed, "queue deleted");
    Ok(HttpResponse::Ok().json(json!({
        "deleted": true,
        "queue": queue.as_str(),
        "existed": existed,
    })))
}

/// `GET /api/v1/resources/partitions?queue=&limit=&offset=` (decision 9.6).
#[instrument(skip_all)]
#[utoipa::path(
    get,
    path = "/api/v1/resources/partitions",
    tag = "resources",
    params(crate::http::openapi::params::PartitionsQuery),
    responses(
        (status = 200, description = "partitions", body = Object),
        (status = 400, description = "bad input", body = crate::http::openapi::schemas::ErrorBody),
        (status = 500, description = "database or storage failure", body = crate::http::openapi::schemas::ErrorBody)
    )
)]
pub async fn partitions(
    state: web::Data<AppState>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let query = Query::parse(req.query_string())?;
    let (limit, offset) = page(&query)?;
    let queue = query.text("queue").map(queue_name).transpose()?;
    let tenant = state.tenant(&req);
    let mut conn = state.broker.db.conn().await?;
    let queue = queue.as_ref().map(|q| q.as_str());
    let body = db::partitions(&mut conn, tenant.as_str(), queue, limit, offset).await?;
    Ok(HttpResponse::Ok().json(body))
}

/// `GET /api/v1/resources/namespaces`.
#[instrument(skip_all)]
#[utoipa::path(
    get,
    path = "/api/v1/resources/namespaces",
    tag = "resources",
    responses(
        (status = 200, description = "namespaces", body = Object),
        (status = 500, description = "database or storage failure", body = crate::http::openapi::schemas::ErrorBody)
    )
)]
pub async fn namespaces(
    state: web::Data<AppState>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let tenant = state.tenant(&req);
    let mut conn = state.broker.db.conn().await?;
    Ok(HttpResponse::Ok().json(db::namespaces(&mut conn, tenant.as_str()).await?))
}

/// `GET /api/v1/resources/tasks`.
#[instrument(skip_all)]
#[utoipa::path(
    get,
    path = "/api/v1/resources/tasks",
    tag = "resources",
    responses(
        (status = 200, description = "tasks", body = Object),
        (status = 500, description = "database or storage failure", body = crate::http::openapi::schemas::ErrorBody)
    )
)]
pub async fn tasks(state: web::Data<AppState>, req: HttpRequest) -> Result<HttpResponse, ApiError> {
    let tenant = state.tenant(&req);
    let mut conn = state.broker.db.conn().await?;
    Ok(HttpResponse::Ok().json(db::tasks(&mut conn, tenant.as_str()).await?))
}
