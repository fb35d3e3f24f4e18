//! Consumer groups (contract §4.1): list, lagging partitions, one group's detail, delete
//! (everywhere or on one queue), subscription update and seek.
//!
//! A seek never breaks a live lease: when a worker of the group holds an unexpired lease on
//! the queue the seek is refused with 409 and nothing moves (the caller retries once the
//! batch is acked or its lease expires). After a seek the queue's group actors are told
//! which partitions have messages again, locally and through the mesh.

use actix_web::{web, HttpRequest, HttpResponse};
use serde::Deserialize;
use serde_json::{json, Value};
use tracing::instrument;

use super::{group_name, queue_name, timestamp};
use crate::actors::ring::PartitionRef;
use crate::actors::wake_gate::WakeSource;
use crate::db::admin::groups as db;
use crate::http::body::{parse_json, read_body};
use crate::http::error::ApiError;
use crate::http::query::Query;
use crate::http::state::AppState;

/// Default of `minLagSeconds` (the client's default).
const DEFAULT_MIN_LAG_SECONDS: u64 = 60;

/// `GET /api/v1/consumer-groups`: one entry per (group, queue); `totalLag` is the number of
/// messages not yet done, `maxTimeLag` the age in seconds of the oldest of them.
#[instrument(skip_all)]
#[utoipa::path(
    get,
    path = "/api/v1/consumer-groups",
    tag = "consumer groups",
    responses(
        (status = 200, description = "groups per queue with lag", body = Vec<Object>),
        (status = 500, description = "database or storage failure", body = crate::http::openapi::schemas::ErrorBody)
    )
)]
pub async fn list(state: web::Data<AppState>, req: HttpRequest) -> Result<HttpResponse, ApiError> {
    let tenant = state.tenant(&req);
    let mut conn = state.broker.db.conn().await?;
    let groups = db::list(&mut conn, tenant.as_str()).await?;
    Ok(HttpResponse::Ok().json(groups))
}

/// `GET /api/v1/consumer-groups/lagging?minLagSeconds=`: partitions whose oldest unconsumed
/// message is at least that old.
#[instrument(skip_all)]
#[utoipa::path(
    get,
    path = "/api/v1/consumer-groups/lagging",
    tag = "consumer groups",
    params(crate::http::openapi::params::LaggingQuery),
    responses(
        (status = 200, description = "lagging partitions", body = Vec<Object>),
        (status = 400, description = "bad input", body = crate::http::openapi::schemas::ErrorBody),
        (status = 500, description = "database or storage failure", body = crate::http::openapi::schemas::ErrorBody)
    )
)]
pub async fn lagging(
    state: web::Data<AppState>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let query = Query::parse(req.query_string())?;
    let min = query.number(
        "minLagSeconds",
        DEFAULT_MIN_LAG_SECONDS,
        0,
        u64::from(u32::MAX),
    )?;
    let tenant = state.tenant(&req);
    let mut conn = state.broker.db.conn().await?;
    let rows = db::lagging(&mut conn, tenant.as_str(), min as f64).await?;
    Ok(HttpResponse::Ok().json(rows))
}

/// `GET /api/v1/consumer-groups/{group}`: the group's partitions keyed by queue; 404 when
/// the group has neither a subscription nor a cursor.
#[instrument(skip_all)]
#[utoipa::path(
    get,
    path = "/api/v1/consumer-groups/{group}",
    tag = "consumer groups",
    params(("group" = String, Path, pattern = r"^[^/?#\u0000-\u001f\u007f-\u009f]+$", min_length = 1, description = "Consumer group (at most 512 bytes)")),
    responses(
        (status = 200, description = "partitions by queue", body = Object),
        (status = 400, description = "bad input", body = crate::http::openapi::schemas::ErrorBody),
        (status = 404, description = "Consumer group not found", body = crate::http::openapi::schemas::ErrorBody),
        (status = 500, description = "database or storage failure", body = crate::http::openapi::schemas::ErrorBody)
    )
)]
pub async fn detail(
    state: web::Data<AppState>,
    req: HttpRequest,
    path: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let group = group_name(&path.into_inner())?;
    let tenant = state.tenant(&req);
    let mut conn = state.broker.db.conn().await?;
    match db::detail(&mut conn, tenant.as_str(), group.as_str()).await? {
        Some(detail) => Ok(HttpResponse::Ok().json(detail)),
        None => Err(ApiError::NotFound("Consumer group not found".into())),
    }
}

/// `DELETE /api/v1/consumer-groups/{group}?deleteMetadata=`: forgets the group on every
/// queue (metadata too unless `deleteMetadata=false`).
#[instrument(skip_all)]
#[utoipa::path(
    delete,
    path = "/api/v1/consumer-groups/{group}",
    tag = "consumer groups",
    params(crate::http::openapi::params::DeleteGroupQuery, ("group" = String, Path, pattern = r"^[^/?#\u0000-\u001f\u007f-\u009f]+$", min_length = 1, description = "Consumer group (at most 512 bytes)")),
    responses(
        (status = 200, description = "deleted", body = Object),
        (status = 400, description = "bad input", body = crate::http::openapi::schemas::ErrorBody),
        (status = 500, description = "database or storage failure", body = crate::http::openapi::schemas::ErrorBody)
    )
)]
pub async fn delete(
    state: web::Data<AppState>,
    req: HttpRequest,
    path: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let group = group_name(&path.into_inner())?;
    let query = Query::parse(req.query_string())?;
    let delete_metadata = query.flag("deleteMetadata", true)?;
    let deleted = delete_group(&state, &req, group.as_str(), None, delete_metadata).await?;
    Ok(HttpResponse::Ok().json(json!({
        "success": true,
        "consumerGroup": group.as_str(),
        "deletedPartitions": deleted.partitions,
        "metadataDeleted": deleted.metadata > 0,
    })))
}

/// `DELETE /api/v1/consumer-groups/{group}/queues/{queue}?deleteMetadata=`.
#[instrument(skip_all)]
#[utoipa::path(
    delete,
    path = "/api/v1/consumer-groups/{group}/queues/{queue}",
    tag = "consumer groups",
    params(crate::http::openapi::params::DeleteGroupQuery, ("group" = String, Path, pattern = r"^[^/?#\u0000-\u001f\u007f-\u009f]+$", min_length = 1, description = "Consumer group (at most 512 bytes)"), ("queue" = String, Path, pattern = r"^[^/?#\u0000-\u001f\u007f-\u009f]+$", min_length = 1, description = "Queue name (at most 512 bytes)")),
    responses(
        (status = 200, description = "deleted", body = Object),
        (status = 400, description = "bad input", body = crate::http::openapi::schemas::ErrorBody),
        (status = 500, description = "database or storage failure", body = crate::http::openapi::schemas::ErrorBody)
    )
)]
pub async fn delete_for_queue(
    state: web::Data<AppState>,
    req: HttpRequest,
    path: web::Path<(String, String)>,
) -> Result<HttpResponse, ApiError> {
    let (group, queue) = path.into_inner();
    let group = group_name(&group)?;
    let queue = queue_name(&queue)?;
    let query = Query::parse(req.query_string())?;
    let delete_metadata = query.flag("deleteMetadata", true)?;
    let deleted = delete_group(
        &state,
        &req,
        group.as_str(),
        Some(queue.as_str()),
        delete_metadata,
    )
    .await?;
    Ok(HttpResponse::Ok().json(json!({
        "success": true,
        "consumerGroup": group.as_str(),
        "queueName": queue.as_str(),
        "deletedPartitions": deleted.partitions,
        "metadataDeleted": deleted.metadata > 0,
    })))
}

async fn delete_group(
    state: &AppState,
    req: &HttpRequest,
    group: &str,
    queue: Option<&str>,
    delete_metadata: bool,
) -> Result<db::Deleted, ApiError> {
    let tenant = state.tenant(req);
    let mut conn = state.broker.db.conn().await?;
    let deleted = db::delete(&mut conn, tenant.as_str(), group, queue, delete_metadata).await?;
    drop(conn);
    for name in &deleted.queues {
        if let Ok(queue) = queue_name(name) {
            state.broker.registry.config_changed(&tenant, &queue);
            state.broker.mesh.config_changed(&tenant, &queue);
        }
    }
    Ok(deleted)
}

#[derive(Deserialize)]
struct SubscriptionBody {
    #[serde(rename = "subscriptionTimestamp")]
    subscription_timestamp: Option<Value>,
}

/// `POST /api/v1/consumer-groups/{group}/subscription` with `{"subscriptionTimestamp"}`:
/// moves the group's durable subscriptions (not its cursors: that is a seek).
#[instrument(skip_all)]
#[utoipa::path(
    post,
    path = "/api/v1/consumer-groups/{group}/subscription",
    tag = "consumer groups",
    params(("group" = String, Path, pattern = r"^[^/?#\u0000-\u001f\u007f-\u009f]+$", min_length = 1, description = "Consumer group (at most 512 bytes)")),
    request_body = crate::http::openapi::schemas::SubscriptionBody,
    responses(
        (status = 200, description = "moved", body = Object),
        (status = 400, description = "bad input", body = crate::http::openapi::schemas::ErrorBody),
        (status = 500, description = "database or storage failure", body = crate::http::openapi::schemas::ErrorBody)
    )
)]
pub async fn subscription(
    state: web::Data<AppState>,
    req: HttpRequest,
    path: web::Path<String>,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    let group = group_name(&path.into_inner())?;
    let body = read_body(payload, state.broker.config.http.max_body_bytes).await?;
    let raw: SubscriptionBody = parse_json(&body)?;
    let ts = match raw.subscription_timestamp {
        Some(Value::String(s)) => timestamp("subscriptionTimestamp", &s)?,
        _ => {
            return Err(ApiError::bad_request(
                "subscriptionTimestamp is required and must be an ISO-8601 string",
            ))
        }
    };
    let tenant = state.tenant(&req);
    let mut conn = state.broker.db.conn().await?;
    let rows = db::set_subscription(&mut conn, tenant.as_str(), group.as_str(), ts).await?;
    Ok(HttpResponse::Ok().json(json!({
        "success": true,
        "consumerGroup": group.as_str(),
        "newTimestamp": ts.to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
        "rowsUpdated": rows,
    })))
}

#[derive(Deserialize, Default)]
struct SeekBody {
    #[serde(rename = "toEnd")]
    to_end: Option<Value>,
    timestamp: Option<Value>,
}

/// `POST /api/v1/consumer-groups/{group}/queues/{queue}/seek` with `{"toEnd": true}` or
/// `{"timestamp": "<ISO>"}` (400 when neither; 404 for an unknown queue; 409 while a
/// worker of the group holds a live lease on the queue).
#[instrument(skip_all)]
#[utoipa::path(
    post,
    path = "/api/v1/consumer-groups/{group}/queues/{queue}/seek",
    tag = "consumer groups",
    params(
        ("group" = String, Path, pattern = r"^[^/?#\u0000-\u001f\u007f-\u009f]+$", min_length = 1, description = "Consumer group (at most 512 bytes)"),
        ("queue" = String, Path, pattern = r"^[^/?#\u0000-\u001f\u007f-\u009f]+$", min_length = 1, description = "Queue name (at most 512 bytes)")
    ),
    request_body = crate::http::openapi::schemas::SeekBody,
    responses(
        (status = 200, description = "moved", body = Object),
        (status = 400, description = "bad input", body = crate::http::openapi::schemas::ErrorBody),
        (status = 404, description = "Queue not found", body = crate::http::openapi::schemas::ErrorBody),
        (status = 409, description = "the group holds a live lease", body = crate::http::openapi::schemas::ErrorBody),
        (status = 500, description = "database or storage failure", body = crate::http::openapi::schemas::ErrorBody)
    )
)]
pub async fn seek(
    state: web::Data<AppState>,
    req: HttpRequest,
    path: web::Path<(String, String)>,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    let (group, queue) = path.into_inner();
    let group = group_name(&group)?;
    let queue = queue_name(&queue)?;
    let body = read_body(payload, state.broker.config.http.max_body_bytes).await?;
    let raw: SeekBody = if body.iter().all(u8::is_ascii_whitespace) {
        SeekBody::default()
    } else {
        parse_json(&body)?
    };
    let to_end = matches!(raw.to_end, Some(Value::Bool(true)));
    let target = match (&raw.timestamp, to_end) {
        (Some(Value::String(s)), false) => Some(timestamp("timestamp", s)?),
        (None | Some(Value::Null), true) => None,
        (Some(Value::String(_)), true) => {
            return Err(ApiError::bad_request(
                "give either toEnd or timestamp, not both",
            ))
        }
        _ => {
            return Err(ApiError::bad_request(
                "seek needs {\"toEnd\": true} or {\"timestamp\": \"<ISO-8601>\"}",
            ))
        }
    };

    let tenant = state.tenant(&req);
    let mut conn = state.broker.db.conn().await?;
    let outcome = db::seek(
        &mut conn,
        tenant.as_str(),
        group.as_str(),
        queue.as_str(),
        target,
    )
    .await?;
    drop(conn);
    let moved =
        match outcome {
            db::Seek::NoQueue => return Err(ApiError::NotFound("Queue not found".into())),
            db::Seek::Leased => return Err(ApiError::Conflict(
                "consumer group holds a live lease on this queue; ack or let it expire, then seek"
                    .into(),
            )),
            db::Seek::Moved(moved) => moved,
        };
    // The actors' rings believe these partitions are drained: tell them what is pending.
    state.broker.registry.config_changed(&tenant, &queue);
    for m in moved.iter().filter(|m| m.last_offset > m.committed) {
        let pending = u32::try_from(m.last_offset - m.committed).unwrap_or(u32::MAX);
        let partition = PartitionRef {
            id: m.partition_id,
            name: m.partition.as_str().into(),
        };
        state
            .broker
            .mesh
            .push_landed(&tenant, &queue, &partition, m.last_offset, pending);
        state
            .broker
            .registry
            .push_landed(&tenant, &queue, partition, pending, WakeSource::Push);
    }
    Ok(HttpResponse::Ok().json(json!({
        "success": true,
        "consumerGroup": group.as_str(),
        "queueName": queue.as_str(),
        "seekToEnd": to_end,
        "targetTimestamp": target.map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)),
        "partitionsUpdated": moved.len(),
    })))
}
