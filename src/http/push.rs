//! `POST /api/v1/push`: validate every item of a JSON or `QPB1` body (dispatched on the
//! magic, not the content type), store all or nothing, answer one object per item in
//! request order (or, with `QPB1` flag 2, the totals).

use actix_web::{web, HttpRequest, HttpResponse};
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{json, Value};
use uuid::Uuid;

use super::binary::qpb1;
use super::{parse_json, read_body, ApiError, AppState};
use crate::domain::{PartitionName, QueueName};
use crate::log::push::{
    push as store, push_prebuilt as store_prebuilt, PushItem, PushOutcome, PushStatus,
};

/// Largest transaction id: the stored frame's `u16` length prefix.
const MAX_TRANSACTION_ID_BYTES: usize = 65_535;

#[derive(Deserialize)]
struct PushBody {
    items: Vec<RawItem>,
}

/// One pushed item as sent, before validation (also the items of a transaction's push).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct RawItem {
    queue: Option<Value>,
    partition: Option<Value>,
    payload: Option<Box<RawValue>>,
    transaction_id: Option<Value>,
    trace_id: Option<Value>,
}

/// The handler.
#[utoipa::path(
    post,
    path = "/api/v1/push",
    tag = "messages",
    request_body = crate::http::openapi::schemas::PushBody,
    responses(
        (status = 201, description = "one verdict per item (or, with the binary flag 2, totals)", body = Value),
        (status = 400, description = "bad input", body = crate::http::openapi::schemas::ErrorBody),
        (status = 413, description = "body too large", body = crate::http::openapi::schemas::ErrorBody),
        (status = 500, description = "database or storage failure", body = crate::http::openapi::schemas::ErrorBody)
    )
)]
pub async fn push(
    state: web::Data<AppState>,
    req: HttpRequest,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    let limit = state.broker.config.http.max_body_bytes;
    let body = read_body(payload, limit).await?;
    if body.starts_with(b"QPB") {
        return push_binary(&state, &req, &body, limit).await;
    }
    if body.starts_with(b"QTB1") {
        return Err(ApiError::bad_request(
            "binary push bodies are not supported by this broker yet; send JSON",
        ));
    }
    let parsed: PushBody = parse_json(&body)?;
    let mut items = parsed
        .items
        .into_iter()
        .enumerate()
        .map(|(i, raw)| validate(i, raw))
        .collect::<Result<Vec<_>, _>>()?;
    stamp(&mut items, state.producer(&req));

    let outcomes = store(
        &state.broker,
        &state.tenant(&req),
        items,
        state.broker.config.push.zstd_level,
    )
    .await?;
    Ok(HttpResponse::Created().json(answer(&outcomes)))
}

/// A `QPB1` body: decoded into the same items, stored the same way; flag-8 groups are
/// stored as the client compressed them.
async fn push_binary(
    state: &AppState,
    req: &HttpRequest,
    body: &[u8],
    limit: usize,
) -> Result<HttpResponse, ApiError> {
    let mut decoded =
        qpb1::decode(body, limit).map_err(|e| ApiError::bad_request(e.to_string()))?;
    stamp(&mut decoded.items, state.producer(req));
    let outcomes = store_prebuilt(
        &state.broker,
        &state.tenant(req),
        decoded.items,
        decoded.prebuilt,
        state.broker.config.push.zstd_level,
    )
    .await?;
    if decoded.counts_only {
        let count = |f: fn(&PushStatus) -> bool| outcomes.iter().filter(|o| f(&o.status)).count();
        return Ok(HttpResponse::Created().json(json!({
            "count": outcomes.len(),
            "queued": count(|s| *s == PushStatus::Queued),
            "duplicate": count(|s| *s == PushStatus::Duplicate),
            "error": count(|s| matches!(s, PushStatus::Full { .. })),
        })));
    }
    Ok(HttpResponse::Created().json(answer(&outcomes)))
}

/// One answer object per item, in request order (decision 9.1: camelCase keys).
fn answer(outcomes: &[PushOutcome]) -> Vec<PushAnswer<'_>> {
    outcomes
        .iter()
        .enumerate()
        .map(|(index, o)| PushAnswer {
            index,
            status: o.status.wire(),
            transaction_id: &o.transaction_id,
            message_id: o.message_id,
            partition_id: o.partition_id.to_string(),
            offset: o.offset,
            error: o.status.error(),
        })
        .collect()
}

/// One item's answer, serialised straight from this struct (a `serde_json::Value` per
/// item showed as allocator time in the push profile).
#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct PushAnswer<'a> {
    index: usize,
    status: &'static str,
    transaction_id: &'a str,
    message_id: Uuid,
    partition_id: String,
    offset: i64,
    error: Option<String>,
}

/// Validates item `index` into a [`PushItem`]; errors name `items[index].<field>`.
pub(super) fn validate(index: usize, raw: RawItem) -> Result<PushItem, ApiError> {
    let field = |name: &str| format!("items[{index}].{name}");
    let text = |name: &str, value: Option<Value>| -> Result<Option<String>, ApiError> {
        match value {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(_) => Err(ApiError::bad_request(format!(
                "{} must be a string",
                field(name)
            ))),
        }
    };
    let queue = text("queue", raw.queue)?
        .ok_or_else(|| ApiError::bad_request(format!("{} is required", field("queue"))))?;
    let queue = QueueName::parse(queue)
        .map_err(|e| ApiError::bad_request(format!("{}: {e}", field("queue"))))?;
    let partition = match text("partition", raw.partition)? {
        None => PartitionName::default_partition(),
        Some(p) => PartitionName::parse(p)
            .map_err(|e| ApiError::bad_request(format!("{}: {e}", field("partition"))))?,
    };
    let transaction_id = text("transactionId", raw.transaction_id)?.filter(|t| !t.is_empty());
    if transaction_id
        .as_ref()
        .is_some_and(|t| t.len() > MAX_TRANSACTION_ID_BYTES)
    {
        return Err(ApiError::bad_request(format!(
            "{} is longer than {MAX_TRANSACTION_ID_BYTES} bytes",
            field("transactionId")
        )));
    }
    let trace_id =
        match text("traceId", raw.trace_id)? {
            None => None,
            Some(t) => Some(Uuid::parse_str(&t).map_err(|_| {
                ApiError::bad_request(format!("{} must be a UUID", field("traceId")))
            })?),
        };
    let payload = raw
        .payload
        .map_or_else(|| b"null".to_vec(), |p| p.get().trim().as_bytes().to_vec());
    Ok(PushItem {
        queue,
        partition,
        payload,
        transaction_id,
        trace_id,
        producer: None,
    })
}

/// Stamps the request's producer (see [`AppState::producer`]) on every item.
pub(super) fn stamp(items: &mut [PushItem], producer: Option<std::sync::Arc<str>>) {
    if producer.is_some() {
        for item in items {
            item.producer = producer.clone();
        }
    }
}
