//! The handlers of the eight ephemeral routes. Each reads and checks its input completely
//! (a 400 changes nothing), then hands a `Call` to [`super::dispatch`]. Roles are the
//! access rules' (`src/auth/rules.rs`): the six that change or consume a queue need
//! `read-write`, the two that read gauges `read-only`; tenants never see each other's
//! queues (the tenant is part of every key).

use actix_web::{web, HttpRequest, HttpResponse};
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::Value;

use super::dispatch::{self, refused};
use crate::domain::ephemeral::{
    ack_entries, group_name, partition_name, push_payloads, queue_name, Call, EphemeralInputError,
    EphemeralOptions, PopRequest,
};
use crate::http::body::read_body;
use crate::http::state::AppState;

/// A JSON body, or a 400 saying why not.
async fn body<T: for<'de> Deserialize<'de>>(
    state: &AppState,
    payload: web::Payload,
) -> Result<T, EphemeralInputError> {
    let bytes = read_body(payload, state.broker.config.http.max_body_bytes)
        .await
        .map_err(|e| EphemeralInputError::new("body", e.to_string()))?;
    serde_json::from_slice(&bytes)
        .map_err(|e| EphemeralInputError::new("json", format!("invalid JSON body: {e}")))
}

#[derive(Deserialize)]
struct QueueBody {
    queue: Option<String>,
    options: Option<Value>,
}

/// `POST /api/v1/ephemeral/configure`.
#[utoipa::path(
    post,
    path = "/api/v1/ephemeral/configure",
    tag = "ephemeral",
    request_body(content = Object, description = "`{queue, options: {maxBytes?, maxLength?, policy?: reject | dropOldest, ttlSeconds?, leaseSeconds?, retryLimit?, windowBuffer?: {ms, count}}}`"),
    responses(
        (status = 201, description = "`{queue, configured: true, options}`: the stored declaration, every option filled in", body = Object),
        (status = 400, description = "bad input; nothing changed", body = crate::http::openapi::kv_schemas::KvErrorBody),
        (status = 503, description = "the database could not store the declaration; `Retry-After`", body = crate::http::openapi::kv_schemas::KvErrorBody)
    )
)]
pub async fn configure(
    state: web::Data<AppState>,
    req: HttpRequest,
    payload: web::Payload,
) -> HttpResponse {
    let checked = async {
        let b: QueueBody = body(&state, payload).await?;
        let queue = queue_name(b.queue.as_deref())?;
        let options = EphemeralOptions::parse(b.options.as_ref())?;
        Ok(Call::Configure {
            queue: queue.as_str().to_owned(),
            options,
        })
    };
    send(&state, &req, checked.await).await
}

/// `POST /api/v1/ephemeral/reset`.
#[utoipa::path(
    post,
    path = "/api/v1/ephemeral/reset",
    tag = "ephemeral",
    request_body(content = Object, description = "`{queue}`"),
    responses(
        (status = 200, description = "`{queue, dropped}`: messages dropped (0 for an unknown queue); leases and cursors gone, the declaration kept", body = Object),
        (status = 400, description = "bad input", body = crate::http::openapi::kv_schemas::KvErrorBody)
    )
)]
pub async fn reset(
    state: web::Data<AppState>,
    req: HttpRequest,
    payload: web::Payload,
) -> HttpResponse {
    let checked = async {
        let b: QueueBody = body(&state, payload).await?;
        let queue = queue_name(b.queue.as_deref())?;
        Ok(Call::Reset {
            queue: queue.as_str().to_owned(),
        })
    };
    send(&state, &req, checked.await).await
}

/// `DELETE /api/v1/ephemeral/queue/{queue}`.
#[utoipa::path(
    delete,
    path = "/api/v1/ephemeral/queue/{queue}",
    tag = "ephemeral",
    params(("queue" = String, Path, description = "the queue, percent-encoded")),
    responses(
        (status = 200, description = "`{queue, deleted}`: contents, cursors and declaration gone; `deleted: false` when there was nothing", body = Object),
        (status = 400, description = "bad queue name", body = crate::http::openapi::kv_schemas::KvErrorBody),
        (status = 503, description = "the database could not remove the declaration; `Retry-After`", body = crate::http::openapi::kv_schemas::KvErrorBody)
    )
)]
pub async fn delete(
    state: web::Data<AppState>,
    req: HttpRequest,
    path: web::Path<String>,
) -> HttpResponse {
    let checked = queue_name(Some(path.as_str())).map(|queue| Call::Delete {
        queue: queue.as_str().to_owned(),
    });
    send(&state, &req, checked).await
}

#[derive(Deserialize)]
struct PushBody<'a> {
    queue: Option<String>,
    partition: Option<String>,
    #[serde(borrow)]
    messages: Option<&'a RawValue>,
}

/// `POST /api/v1/ephemeral/push`.
#[utoipa::path(
    post,
    path = "/api/v1/ephemeral/push",
    tag = "ephemeral",
    request_body(content = Object, description = "`{queue, partition?, messages: [{payload}]}` (`{data}` is read as `{payload}`); partition `Default` when none"),
    responses(
        (status = 200, description = "`{queue, pushed}`: every message stored, in order", body = Object),
        (status = 400, description = "bad input; nothing stored", body = crate::http::openapi::kv_schemas::KvErrorBody),
        (status = 413, description = "`too_large`: the push alone is past the queue's bounds; nothing stored", body = crate::http::openapi::kv_schemas::KvErrorBody),
        (status = 429, description = "`queue_full` (policy reject) or `broker_full` (QUEEN_EPHEMERAL_MAX_BYTES); nothing stored; `Retry-After`", body = crate::http::openapi::kv_schemas::KvErrorBody)
    )
)]
pub async fn push(
    state: web::Data<AppState>,
    req: HttpRequest,
    payload: web::Payload,
) -> HttpResponse {
    let checked = async {
        let bytes = read_body(payload, state.broker.config.http.max_body_bytes)
            .await
            .map_err(|e| EphemeralInputError::new("body", e.to_string()))?;
        let b: PushBody<'_> = serde_json::from_slice(&bytes)
            .map_err(|e| EphemeralInputError::new("json", format!("invalid JSON body: {e}")))?;
        let queue = queue_name(b.queue.as_deref())?;
        let partition = partition_name(b.partition.as_deref())?;
        let payloads = push_payloads(b.messages)?;
        Ok(Call::Push {
            queue: queue.as_str().to_owned(),
            partition: partition.map(|p| p.as_str().to_owned()),
            payloads,
        })
    };
    send(&state, &req, checked.await).await
}

/// `GET /api/v1/ephemeral/pop`.
#[utoipa::path(
    get,
    path = "/api/v1/ephemeral/pop",
    tag = "ephemeral",
    params(
        ("queue" = String, Query, description = "the queue"),
        ("partition" = Option<String>, Query, description = "one partition (default: each in turn)"),
        ("batch" = Option<u32>, Query, description = "most messages, 1..10000 (default 1)"),
        ("wait" = Option<bool>, Query, description = "long poll until a message, the timeout, or shutdown"),
        ("timeout" = Option<u64>, Query, description = "long-poll milliseconds, 0..300000 (default 30000)"),
        ("group" = Option<String>, Query, description = "consumer group (default: queue mode)"),
        ("autoAck" = Option<bool>, Query, description = "commit at delivery: no lease, nothing to ack")
    ),
    responses(
        (status = 200, description = "`{queue, messages: [{id, partition, payload, attempts}]}`, `messages` empty when there was nothing", body = Object),
        (status = 400, description = "bad input", body = crate::http::openapi::kv_schemas::KvErrorBody)
    )
)]
pub async fn pop(state: web::Data<AppState>, req: HttpRequest) -> HttpResponse {
    let checked = PopRequest::parse(req.query_string()).map(Call::Pop);
    send(&state, &req, checked).await
}

#[derive(Deserialize)]
struct AckBody {
    queue: Option<String>,
    group: Option<String>,
    acks: Option<Value>,
}

/// `POST /api/v1/ephemeral/ack`.
#[utoipa::path(
    post,
    path = "/api/v1/ephemeral/ack",
    tag = "ephemeral",
    request_body(content = Object, description = "`{queue, group?, acks: [{id, status?: completed | failed | retry}]}`"),
    responses(
        (status = 200, description = "`{queue, results: [{id, outcome}]}`, outcome `acked`, `redelivered` (failed or retry: back with attempts + 1), `stale` (no longer held: another incarnation, dropped, expired, reset) or `unknown` (no lease of this group on it)", body = Object),
        (status = 400, description = "bad input; nothing acked", body = crate::http::openapi::kv_schemas::KvErrorBody)
    )
)]
pub async fn ack(
    state: web::Data<AppState>,
    req: HttpRequest,
    payload: web::Payload,
) -> HttpResponse {
    let checked = async {
        let b: AckBody = body(&state, payload).await?;
        let queue = queue_name(b.queue.as_deref())?;
        let group = group_name(b.group.as_deref())?;
        let acks = ack_entries(b.acks.as_ref())?;
        Ok(Call::Ack {
            queue: queue.as_str().to_owned(),
            group: group.as_str().to_owned(),
            acks,
        })
    };
    send(&state, &req, checked.await).await
}

/// `GET /api/v1/ephemeral/queues`.
#[utoipa::path(
    get,
    path = "/api/v1/ephemeral/queues",
    tag = "ephemeral",
    responses(
        (status = 200, description = "`{count, queues: [{queue, tier, declared, node, depth, bytes, partitions, groups, drops, options}], unanswered}`: the tenant's declared queues and those any node holds, with the gauges of the node that holds each (`node`; null for a declared queue no node holds now); `unanswered` names the nodes that did not answer within 2 s, whose queues may be missing", body = Object),
        (status = 503, description = "the database could not list the declarations; `Retry-After`", body = crate::http::openapi::kv_schemas::KvErrorBody)
    )
)]
pub async fn queues(state: web::Data<AppState>, req: HttpRequest) -> HttpResponse {
    let tenant = state.tenant(&req);
    dispatch::respond(crate::ephemeral::serve::list(&state.broker, tenant.as_str()).await)
}

/// `GET /api/v1/ephemeral/queues/{queue}/depth`.
#[utoipa::path(
    get,
    path = "/api/v1/ephemeral/queues/{queue}/depth",
    tag = "ephemeral",
    params(("queue" = String, Path, description = "the queue, percent-encoded")),
    responses(
        (status = 200, description = "`{queue, tier, pending, bytes, partitionsPending, partitions: [{partition, pending, bytes}], groups: [{group, pending, leased}], pushed, dropped, expired, retriesExhausted, refused, options, declared}`", body = Object),
        (status = 400, description = "bad queue name", body = crate::http::openapi::kv_schemas::KvErrorBody),
        (status = 404, description = "`ephemeral_queue_not_found`: neither declared nor held", body = crate::http::openapi::kv_schemas::KvErrorBody)
    )
)]
pub async fn depth(
    state: web::Data<AppState>,
    req: HttpRequest,
    path: web::Path<String>,
) -> HttpResponse {
    let checked = queue_name(Some(path.as_str())).map(|queue| Call::Depth {
        queue: queue.as_str().to_owned(),
    });
    send(&state, &req, checked).await
}

async fn send(
    state: &AppState,
    req: &HttpRequest,
    checked: Result<Call, EphemeralInputError>,
) -> HttpResponse {
    match checked {
        Ok(call) => {
            let tenant = state.tenant(req);
            dispatch::call(&state.broker, tenant.as_str(), call).await
        }
        Err(error) => refused(error),
    }
}
