//! What an operator reads of the key/value store: `GET /api/v1/resources/kv` (the tenant's
//! namespaces with their live key counts) and `GET /api/v1/resources/kv/{namespace}` (a
//! page of a namespace's keys, any prefix, the empty one included). The console's
//! key/value and locks pages stand on them; clients use `POST /api/v1/kv`.

use actix_web::{web, HttpRequest, HttpResponse};
use tracing::instrument;

use crate::db::admin::resources as db;
use crate::domain::kv::limits::{
    is_namespace, MAX_KEY_BYTES, PREFIX_LIMIT_DEFAULT, PREFIX_LIMIT_MAX,
};
use crate::http::error::ApiError;
use crate::http::query::Query;
use crate::http::state::AppState;

/// `GET /api/v1/resources/kv`.
#[instrument(skip_all)]
#[utoipa::path(
    get,
    path = "/api/v1/resources/kv",
    tag = "resources",
    responses(
        (status = 200, description = "`{namespaces: [{namespace, keys, expiring, bytes, updatedAt}]}`, live keys only, by name", body = Object),
        (status = 500, description = "database or storage failure", body = crate::http::openapi::schemas::ErrorBody)
    )
)]
pub async fn namespaces(
    state: web::Data<AppState>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let tenant = state.tenant(&req);
    let mut conn = state.broker.db.conn().await?;
    Ok(HttpResponse::Ok().json(db::kv_namespaces(&mut conn, tenant.as_str()).await?))
}

/// `GET /api/v1/resources/kv/{namespace}?prefix=&after=&limit=`.
#[instrument(skip_all)]
#[utoipa::path(
    get,
    path = "/api/v1/resources/kv/{namespace}",
    tag = "resources",
    params(
        ("namespace" = String, Path, description = "a KV namespace"),
        ("prefix" = Option<String>, Query, description = "keys starting with this (default: every key)"),
        ("after" = Option<String>, Query, description = "the `nextAfter` of the page before (exclusive)"),
        ("limit" = Option<u32>, Query, description = "rows per page, 1..1000 (default 100)")
    ),
    responses(
        (status = 200, description = "`{rows: [{key, value, version, expiresAt, updatedAt}], truncated, nextAfter}` in byte order, live keys only", body = Object),
        (status = 400, description = "bad input", body = crate::http::openapi::schemas::ErrorBody),
        (status = 500, description = "database or storage failure", body = crate::http::openapi::schemas::ErrorBody)
    )
)]
pub async fn keys(
    state: web::Data<AppState>,
    req: HttpRequest,
    path: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let namespace = path.into_inner();
    if !is_namespace(&namespace) {
        return Err(ApiError::bad_request(
            "namespace must match ^[a-z0-9][a-z0-9._-]{0,63}$",
        ));
    }
    let query = Query::parse(req.query_string())?;
    let prefix = key_text(&query, "prefix")?.unwrap_or_default();
    let after = key_text(&query, "after")?.filter(|a| !a.is_empty());
    let limit = query.number(
        "limit",
        PREFIX_LIMIT_DEFAULT as u64,
        1,
        PREFIX_LIMIT_MAX as u64,
    )? as i32;
    let tenant = state.tenant(&req);
    let mut conn = state.broker.db.conn().await?;
    let page = db::kv_keys(&mut conn, tenant.as_str(), &namespace, prefix, after, limit).await?;
    Ok(HttpResponse::Ok().json(page))
}

/// A key-shaped query parameter: at most a key's length, no NUL (which PostgreSQL text
/// cannot hold).
fn key_text<'q>(query: &'q Query, name: &str) -> Result<Option<&'q str>, ApiError> {
    match query.text(name) {
        Some(v) if v.len() > MAX_KEY_BYTES || v.contains('\0') => Err(ApiError::bad_request(
            format!("{name} is at most {MAX_KEY_BYTES} bytes, without NUL"),
        )),
        other => Ok(other),
    }
}
