//! Traces (contract §4.7): consumers record events about a message; the dashboard reads
//! them per message, per name, and lists the names.

use actix_web::{web, HttpRequest, HttpResponse};
use serde::Deserialize;
use serde_json::{json, Value};
use tracing::instrument;

use super::{group_name, optional_timestamp, partition_id, transaction_id};
use crate::db::admin::traces as db;
use crate::http::body::{parse_json, read_body};
use crate::http::error::ApiError;
use crate::http::query::Query;
use crate::http::state::AppState;

/// Longest trace name, event type or worker id, in bytes.
const MAX_LABEL_BYTES: usize = 256;
/// Most names one event may be filed under.
const MAX_NAMES: usize = 32;

#[derive(Deserialize)]
struct RawTrace {
    #[serde(rename = "transactionId")]
    transaction_id: Option<Value>,
    #[serde(rename = "partitionId")]
    partition_id: Option<Value>,
    #[serde(rename = "consumerGroup")]
    consumer_group: Option<Value>,
    #[serde(rename = "traceNames")]
    trace_names: Option<Value>,
    #[serde(rename = "eventType")]
    event_type: Option<Value>,
    data: Option<Value>,
    #[serde(rename = "workerId")]
    worker_id: Option<Value>,
}

fn label(name: &str, value: Option<Value>) -> Result<Option<String>, ApiError> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if !s.is_empty() && s.len() <= MAX_LABEL_BYTES => Ok(Some(s)),
        Some(_) => Err(ApiError::bad_request(format!(
            "{name} must be a non-empty string of at most {MAX_LABEL_BYTES} bytes"
        ))),
    }
}

/// `POST /api/v1/traces`: 201 `{success: true, traceId}`; 400 for a malformed body, 404
/// when the partition does not exist.
#[instrument(skip_all)]
#[utoipa::path(
    post,
    path = "/api/v1/traces",
    tag = "traces",
    request_body = crate::http::openapi::schemas::TraceBody,
    responses(
        (status = 201, description = "recorded", body = Object),
        (status = 400, description = "bad input", body = crate::http::openapi::schemas::ErrorBody),
        (status = 404, description = "partition not found", body = crate::http::openapi::schemas::ErrorBody),
        (status = 500, description = "database or storage failure", body = crate::http::openapi::schemas::ErrorBody)
    )
)]
pub async fn add(
    state: web::Data<AppState>,
    req: HttpRequest,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    let body = read_body(payload, state.broker.config.http.max_body_bytes).await?;
    let raw: RawTrace = parse_json(&body)?;
    let txn = match &raw.transaction_id {
        Some(Value::String(s)) => transaction_id(s)?.to_owned(),
        _ => return Err(ApiError::bad_request("transactionId must be a string")),
    };
    let pid = match &raw.partition_id {
        Some(Value::String(s)) => partition_id(s)?,
        Some(Value::Number(n)) => partition_id(&n.to_string())?,
        _ => {
            return Err(ApiError::bad_request(
                "partitionId must be a decimal string",
            ))
        }
    };
    let group = match &raw.consumer_group {
        None | Some(Value::Null) => group_name("__QUEUE_MODE__")?,
        Some(Value::String(s)) => group_name(s)?,
        Some(_) => return Err(ApiError::bad_request("consumerGroup must be a string")),
    };
    let names: Vec<String> = match raw.trace_names {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) if items.len() <= MAX_NAMES => items
            .into_iter()
            .map(|v| label("traceNames entries", Some(v)).map(Option::unwrap_or_default))
            .collect::<Result<_, _>>()?,
        Some(_) => {
            return Err(ApiError::bad_request(format!(
                "traceNames must be an array of at most {MAX_NAMES} strings, or null"
            )))
        }
    };
    let event_type = label("eventType", raw.event_type)?.unwrap_or_else(|| "info".into());
    let worker_id = label("workerId", raw.worker_id)?;
    let data = match raw.data {
        None | Some(Value::Null) => json!({}),
        Some(v @ Value::Object(_)) => v,
        Some(_) => return Err(ApiError::bad_request("data must be a JSON object")),
    };

    let tenant = state.tenant(&req);
    let mut conn = state.broker.db.conn().await?;
    let trace = db::NewTrace {
        partition_id: pid,
        transaction_id: &txn,
        consumer_group: group.as_str(),
        names: &names,
        event_type: &event_type,
        data: &data,
        worker_id: worker_id.as_deref(),
    };
    match db::add(&mut conn, tenant.as_str(), &trace).await? {
        Some(id) => Ok(HttpResponse::Created().json(json!({
            "success": true,
            "traceId": id.to_string(),
        }))),
        None => Err(ApiError::NotFound("Partition not found".into())),
    }
}

/// `GET /api/v1/traces/{partitionId}/{transactionId}`: `{traces}` oldest first (empty when
/// none were recorded).
#[instrument(skip_all)]
#[utoipa::path(
    get,
    path = "/api/v1/traces/{partition_id}/{transaction_id}",
    tag = "traces",
    params(
        ("partition_id" = i64, Path, minimum = 1, description = "Partition id (a positive integer, as a pop answers it)"),
        ("transaction_id" = String, Path, min_length = 1, description = "Message transaction id")
    ),
    responses(
        (status = 200, description = "events", body = Object),
        (status = 400, description = "bad input", body = crate::http::openapi::schemas::ErrorBody),
        (status = 500, description = "database or storage failure", body = crate::http::openapi::schemas::ErrorBody)
    )
)]
pub async fn for_message(
    state: web::Data<AppState>,
    req: HttpRequest,
    path: web::Path<(String, String)>,
) -> Result<HttpResponse, ApiError> {
    let (pid, txn) = path.into_inner();
    let pid = partition_id(&pid)?;
    let txn = transaction_id(&txn)?;
    let tenant = state.tenant(&req);
    let mut conn = state.broker.db.conn().await?;
    let body = db::for_message(&mut conn, tenant.as_str(), pid, txn).await?;
    Ok(HttpResponse::Ok().json(body))
}

/// `GET /api/v1/traces/by-name/{name}?limit=&offset=&from=&to=`.
#[instrument(skip_all)]
#[utoipa::path(
    get,
    path = "/api/v1/traces/by-name/{name}",
    tag = "traces",
    params(crate::http::openapi::params::TracesByNameQuery, ("name" = String, Path, min_length = 1, max_length = 256, description = "Trace name")),
    responses(
        (status = 200, description = "events", body = Object),
        (status = 400, description = "bad input", body = crate::http::openapi::schemas::ErrorBody),
        (status = 500, description = "database or storage failure", body = crate::http::openapi::schemas::ErrorBody)
    )
)]
pub async fn by_name(
    state: web::Data<AppState>,
    req: HttpRequest,
    path: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let name = label("trace name", Some(Value::String(path.into_inner())))?.unwrap_or_default();
    let query = Query::parse(req.query_string())?;
    let limit = query.number("limit", 100, 1, 1000)? as i32;
    let offset = query.number("offset", 0, 0, i32::MAX as u64)? as i32;
    let from = optional_timestamp(&query, "from")?;
    let to = optional_timestamp(&query, "to")?;
    let tenant = state.tenant(&req);
    let mut conn = state.broker.db.conn().await?;
    let body = db::by_name(&mut conn, tenant.as_str(), &name, from, to, limit, offset).await?;
    Ok(HttpResponse::Ok().json(body))
}

/// `GET /api/v1/traces/names?search=&limit=&offset=`.
#[instrument(skip_all)]
#[utoipa::path(
    get,
    path = "/api/v1/traces/names",
    tag = "traces",
    params(crate::http::openapi::params::TraceNamesQuery),
    responses(
        (status = 200, description = "names", body = Object),
        (status = 400, description = "bad input", body = crate::http::openapi::schemas::ErrorBody),
        (status = 500, description = "database or storage failure", body = crate::http::openapi::schemas::ErrorBody)
    )
)]
pub async fn names(state: web::Data<AppState>, req: HttpRequest) -> Result<HttpResponse, ApiError> {
    let query = Query::parse(req.query_string())?;
    let limit = query.number("limit", 100, 1, 1000)? as i32;
    let offset = query.number("offset", 0, 0, i32::MAX as u64)? as i32;
    let tenant = state.tenant(&req);
    let mut conn = state.broker.db.conn().await?;
    let body = db::names(
        &mut conn,
        tenant.as_str(),
        query.text("search"),
        limit,
        offset,
    )
    .await?;
    Ok(HttpResponse::Ok().json(body))
}
