//! `POST /api/v1/configure`: create or update a queue (an upsert of its options).

use std::sync::atomic::Ordering;

use actix_web::{web, HttpRequest, HttpResponse};
use serde::Deserialize;
use serde_json::{json, Value};

use super::body::{parse_json, read_body};
use super::error::ApiError;
use super::state::AppState;
use crate::broker::MIN_POP_WAIT_IN_USE;
use crate::db::queues::{configure as store, stored_row};
use crate::domain::{guarded_change, OptionDefaults, QueueName, QueueOptions};

#[derive(Deserialize)]
struct RawConfigure {
    queue: Option<Value>,
    namespace: Option<Value>,
    task: Option<Value>,
    options: Option<Value>,
}

/// The handler.
#[utoipa::path(
    post,
    path = "/api/v1/configure",
    tag = "queues",
    request_body = crate::http::openapi::schemas::ConfigureBody,
    responses(
        (status = 200, description = "the stored options", body = Object),
        (status = 400, description = "bad input", body = crate::http::openapi::schemas::ErrorBody),
        (status = 403, description = "a change to an existing queue that lets its data go sooner, without the admin role", body = crate::http::openapi::schemas::ErrorBody),
        (status = 500, description = "database or storage failure", body = crate::http::openapi::schemas::ErrorBody)
    )
)]
pub async fn configure(
    state: web::Data<AppState>,
    req: HttpRequest,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    let body = read_body(payload, state.broker.config.http.max_body_bytes).await?;
    let raw: RawConfigure = parse_json(&body)?;
    let queue = match raw.queue {
        Some(Value::String(q)) => {
            QueueName::parse(q).map_err(|e| ApiError::bad_request(e.to_string()))?
        }
        _ => {
            return Err(ApiError::bad_request(
                "queue is required and must be a string",
            ))
        }
    };
    let namespace = optional_text("namespace", raw.namespace)?;
    let task = optional_text("task", raw.task)?;
    let options = QueueOptions::parse(raw.options.as_ref())
        .map_err(|e| ApiError::bad_request(e.to_string()))?;
    let wants_encryption = options.to_sql_json()["encryption_enabled"] == Value::Bool(true);
    if wants_encryption && state.broker.config.push.payload_key.is_none() {
        return Err(ApiError::bad_request(
            "encryptionEnabled needs QUEEN_ENCRYPTION_KEY set on every broker",
        ));
    }

    let mut conn = state.broker.db.conn().await?;
    if !state.is_admin(&req) {
        refuse_data_losing_changes(&state, &mut conn, &req, &queue, &options).await?;
    }
    let stored = store(
        &mut conn,
        state.tenant(&req).as_str(),
        queue.as_str(),
        namespace.as_deref(),
        task.as_deref(),
        &options.to_sql_json(),
    )
    .await?;
    drop(conn);
    let tenant = state.tenant(&req);
    state.broker.registry.config_changed(&tenant, &queue);
    state.broker.encrypted_queues.forget(&tenant, &queue);
    state.broker.mesh.config_changed(&tenant, &queue);
    if stored
        .effective
        .get("min_pop_wait_time")
        .and_then(Value::as_i64)
        .is_some_and(|ms| ms > 0)
    {
        MIN_POP_WAIT_IN_USE.store(true, Ordering::Relaxed);
    }
    Ok(HttpResponse::Ok().json(json!({
        "configured": true,
        "queue": queue.as_str(),
        "queueId": stored.queue_id.to_string(),
        "partitionId": stored.partition_id.to_string(),
        "namespace": namespace,
        "task": task,
        "options": QueueOptions::row_to_wire(&stored.effective),
    })))
}

/// Refuses (403, naming the option) a change to an existing queue that lets its data go
/// sooner or be refused (`crate::domain::option_changes`); creating a queue with any
/// options is left to `read-write`. The row is read before the upsert, outside its
/// transaction: an admin's change in between is overwritten as any concurrent configure is.
async fn refuse_data_losing_changes(
    state: &AppState,
    conn: &mut crate::db::PgConn,
    req: &HttpRequest,
    queue: &QueueName,
    options: &QueueOptions,
) -> Result<(), ApiError> {
    let tenant = state.tenant(req);
    let Some(row) = stored_row(conn, tenant.as_str(), queue.as_str()).await? else {
        return Ok(());
    };
    let config = &state.broker.config;
    let defaults = OptionDefaults {
        retention_secs: config.retention.default_secs,
        completed_retention_secs: config.retention.default_completed_secs,
        dedup_window_secs: config.push.dedup_window_secs,
    };
    match guarded_change(&row, options, &defaults) {
        None => Ok(()),
        Some(change) => Err(ApiError::Forbidden(format!(
            "changing {} of the existing queue {} {}: that needs the admin role",
            change.option,
            queue.as_str(),
            change.effect
        ))),
    }
}

fn optional_text(name: &str, value: Option<Value>) -> Result<Option<String>, ApiError> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if s.is_empty() => Ok(None),
        Some(Value::String(s)) if s.len() <= 512 => Ok(Some(s)),
        Some(_) => Err(ApiError::bad_request(format!(
            "{name} must be a string of at most 512 bytes, or null"
        ))),
    }
}
