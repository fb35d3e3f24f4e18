//! `POST /api/v1/ack` and `POST /api/v1/ack/batch`: HTTP 200 with one verdict per ack, even
//! when refused; 400 only for a malformed request.

use std::borrow::Cow;

use actix_web::{web, HttpRequest, HttpResponse};
use serde::Deserialize;

use super::json_field::JsonField;
use super::{parse_json, read_body, ApiError, AppState};
use crate::domain::ConsumerGroup;
use crate::log::ack::{ack, Ack};

/// One ack as sent, before validation (also a transaction's ack operation).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct RawAck<'a> {
    #[serde(borrow)]
    transaction_id: Option<JsonField<'a>>,
    #[serde(borrow)]
    partition_id: Option<JsonField<'a>>,
    #[serde(borrow)]
    status: Option<JsonField<'a>>,
    #[serde(borrow)]
    error: Option<JsonField<'a>>,
    #[serde(borrow)]
    pub(super) consumer_group: Option<JsonField<'a>>,
    #[serde(borrow)]
    lease_id: Option<JsonField<'a>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawBatch<'a> {
    #[serde(borrow)]
    acknowledgments: Option<Vec<RawAck<'a>>>,
    #[serde(borrow)]
    consumer_group: Option<JsonField<'a>>,
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
    let item = validate(raw, String::new)?;
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
        .map(|(i, a)| validate(a, || format!("acknowledgments[{i}].")))
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
            partition_id: item.partition_id,
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
    #[serde(serialize_with = "super::json_field::id_as_text")]
    partition_id: i64,
    success: bool,
    error: Option<String>,
    lease_released: bool,
    dlq: bool,
}

/// The consumer group of a request: absent or null is queue mode.
pub(super) fn group_of(value: Option<&JsonField<'_>>) -> Result<ConsumerGroup, ApiError> {
    match value {
        None => Ok(ConsumerGroup::queue_mode()),
        Some(JsonField::Text(s)) => {
            ConsumerGroup::parse(Some(s)).map_err(|e| ApiError::bad_request(e.to_string()))
        }
        Some(_) => Err(ApiError::bad_request(
            "consumerGroup must be a string or null",
        )),
    }
}

/// Validates one ack; errors name `<prefix><field>`, the prefix made only for an error.
pub(super) fn validate(raw: RawAck<'_>, prefix: impl Fn() -> String) -> Result<Ack, ApiError> {
    let text = |name: &str, v: Option<JsonField<'_>>| -> Result<Option<String>, ApiError> {
        JsonField::text(v)
            .map(|t| t.map(Cow::into_owned))
            .map_err(|_| ApiError::bad_request(format!("{}{name} must be a string", prefix())))
    };
    let transaction_id = text("transactionId", raw.transaction_id)?
        .filter(|t| !t.is_empty())
        .ok_or_else(|| ApiError::bad_request(format!("{}transactionId is required", prefix())))?;
    let partition_id = match raw.partition_id {
        Some(JsonField::Text(s)) => s.trim().parse::<i64>().ok(),
        Some(JsonField::Number(n)) => n.as_i64(),
        _ => None,
    }
    .filter(|id| *id > 0)
    .ok_or_else(|| {
        ApiError::bad_request(format!(
            "{}partitionId is required: the partition id a pop answered (a positive integer)",
            prefix()
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
