//! `POST /api/v1/ack` and `POST /api/v1/ack/batch`: HTTP 200 with one verdict per ack, even
//! when refused; 400 only for a malformed request.

use actix_web::{web, HttpRequest, HttpResponse};
use serde::Deserialize;
use serde_json::Value;

use super::{parse_json, read_body, ApiError, AppState};
use crate::domain::ConsumerGroup;
use crate::log::ack::{ack, Ack};

/// One ack as sent, before validation (also a transaction's ack operation).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct RawAck {
    transaction_id: Option<Value>,
    partition_id: Option<Value>,
    status: Option<Value>,
    error: Option<Value>,
    pub(super) consumer_group: Option<Value>,
    lease_id: Option<Value>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawBatch {
    acknowledgments: Option<Vec<RawAck>>,
    consumer_group: Option<Value>,
}

/// `POST /api/v1/ack`: one message.
#[utoipa::path(
    post,
    path = "/api/v1/ack",
    tag = "messages",
    request_body = crate::http::openapi::schemas::AckBody,
    responses(
        (status = 200, description = "the verdict, as a one-item list", body = Vec<Object>),
        (status = 400, description = "bad input", body = crate::http::openapi::schemas::ErrorBody),
        (status = 500, description = "database or storage failure", body = crate::http::openapi::schemas::ErrorBody)
    )
)]
pub async fn ack_one(
    state: web::Data<AppState>,
    req: HttpRequest,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    let body = read_body(payload, state.broker.config.http.max_body_bytes).await?;
    let raw: RawAck = parse_json(&body)?;
    let group = group_of(raw.consumer_group.as_ref())?;
    let item = validate(raw, "")?;
    answer(&state, &req, &group, vec![item]).await
}

/// `POST /api/v1/ack/batch`: many messages, possibly of several partitions.
#[utoipa::path(
    post,
    path = "/api/v1/ack/batch",
    tag = "messages",
    request_body = crate::http::openapi::schemas::AckBatchBody,
    responses(
        (status = 200, description = "one verdict per ack", body = Vec<Object>),
        (status = 400, description = "bad input", body = crate::http::openapi::schemas::ErrorBody),
        (status = 500, description = "database or storage failure", body = crate::http::openapi::schemas::ErrorBody)
    )
)]
pub async fn ack_batch(
    state: web::Data<AppState>,
    req: HttpRequest,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    let body = read_body(payload, state.broker.config.http.max_body_bytes).await?;
    let raw: RawBatch = parse_json(&body)?;
    let group = group_of(raw.consumer_group.as_ref())?;
    let entries = raw
        .acknowledgments
        .ok_or_else(|| ApiError::bad_request("acknowledgments is required"))?;
    let items = entries
        .into_iter()
        .enumerate()
        .map(|(i, a)| validate(a, &format!("acknowledgments[{i}].")))
        .collect::<Result<Vec<_>, _>>()?;
    answer(&state, &req, &group, items).await
}

async fn answer(
    state: &AppState,
    req: &HttpRequest,
    group: &ConsumerGroup,
    items: Vec<Ack>,
) -> Result<HttpResponse, ApiError> {
    let verdicts = ack(&state.broker, &state.tenant(req), group, &items).await?;
    let body: Vec<AckAnswer<'_>> = items
        .iter()
        .zip(verdicts)
        .enumerate()
        .map(|(index, (item, v))| AckAnswer {
            index,
            transaction_id: &item.transaction_id,
            partition_id: item.partition_id.to_string(),
            success: v.success,
            error: v.error,
            lease_released: v.lease_released,
            dlq: v.dlq,
        })
        .collect();
    Ok(HttpResponse::Ok().json(body))
}

/// One item's answer, serialised straight from this struct (a `serde_json::Value` per
/// item showed as allocator time in the ack profile).
#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct AckAnswer<'a> {
    index: usize,
    transaction_id: &'a str,
    partition_id: String,
    success: bool,
    error: Option<String>,
    lease_released: bool,
    dlq: bool,
}

/// The consumer group of a request: absent or null is queue mode.
pub(super) fn group_of(value: Option<&Value>) -> Result<ConsumerGroup, ApiError> {
    match value {
        None | Some(Value::Null) => Ok(ConsumerGroup::queue_mode()),
        Some(Value::String(s)) => {
            ConsumerGroup::parse(Some(s)).map_err(|e| ApiError::bad_request(e.to_string()))
        }
        Some(_) => Err(ApiError::bad_request(
            "consumerGroup must be a string or null",
        )),
    }
}

/// Validates one ack; errors name `<prefix><field>`.
pub(super) fn validate(raw: RawAck, prefix: &str) -> Result<Ack, ApiError> {
    let text = |name: &str, v: Option<Value>| -> Result<Option<String>, ApiError> {
        match v {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(_) => Err(ApiError::bad_request(format!(
                "{prefix}{name} must be a string"
            ))),
        }
    };
    let transaction_id = text("transactionId", raw.transaction_id)?
        .filter(|t| !t.is_empty())
        .ok_or_else(|| ApiError::bad_request(format!("{prefix}transactionId is required")))?;
    let partition_id = match raw.partition_id {
        Some(Value::String(s)) => s.trim().parse::<i64>().ok(),
        Some(Value::Number(n)) => n.as_i64(),
        _ => None,
    }
    .filter(|id| *id > 0)
    .ok_or_else(|| {
        ApiError::bad_request(format!(
            "{prefix}partitionId is required: the partition id a pop answered (a positive integer)"
        ))
    })?;
    let status = text("status", raw.status)?.unwrap_or_else(|| "completed".to_owned());
    Ok(Ack {
        partition_id,
        transaction_id,
        status,
        error: text("error", raw.error)?,
        lease_id: text("leaseId", raw.lease_id)?.unwrap_or_default(),
    })
}
