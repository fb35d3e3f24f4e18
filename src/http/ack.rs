//! `POST /api/v1/ack` and `POST /api/v1/ack/batch`: HTTP 200 with one verdict per ack, even
//! when refused; 400 only for a malformed request.

use std::borrow::Cow;

use actix_web::{web, HttpRequest, HttpResponse};
use serde::Deserialize;

use super::body::{parse_json, read_body};
use super::error::ApiError;
use super::json_field::JsonField;
use super::json_out::{boolean, number, optional_string, string};
use super::state::AppState;
use crate::db::ack::AckVerdict;
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
    Ok(HttpResponse::Ok()
        .content_type("application/json")
        .body(answer_json(&items, verdicts)))
}

/// One answer object per item, in request order, written straight into one buffer (see
/// [`super::json_out`]): `index`, `transactionId`, `partitionId` (as text), `success`,
/// `error`, `leaseReleased`, `dlq`.
fn answer_json(items: &[Ack], verdicts: Vec<AckVerdict>) -> Vec<u8> {
    let mut out = Vec::with_capacity(16 + items.len() * 128);
    out.push(b'[');
    for (index, (item, v)) in items.iter().zip(verdicts).enumerate() {
        if index > 0 {
            out.push(b',');
        }
        out.extend_from_slice(b"{\"index\":");
        number(&mut out, index);
        out.extend_from_slice(b",\"transactionId\":");
        string(&mut out, &item.transaction_id);
        out.extend_from_slice(b",\"partitionId\":\"");
        number(&mut out, item.partition_id);
        out.extend_from_slice(b"\",\"success\":");
        boolean(&mut out, v.success);
        out.extend_from_slice(b",\"error\":");
        optional_string(&mut out, v.error.as_deref());
        out.extend_from_slice(b",\"leaseReleased\":");
        boolean(&mut out, v.lease_released);
        out.extend_from_slice(b",\"dlq\":");
        boolean(&mut out, v.dlq);
        out.push(b'}');
    }
    out.push(b']');
    out
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    fn item(transaction_id: &str) -> Ack {
        Ack {
            partition_id: 9_007_199_254_740_993,
            transaction_id: transaction_id.to_string(),
            status: "completed".to_string(),
            error: None,
            lease_id: String::new(),
        }
    }

    #[test]
    fn the_answer_is_one_object_per_item_with_every_key() {
        let items = [item("a \"quoted\" id"), item("b")];
        let verdicts = vec![
            AckVerdict {
                success: true,
                error: None,
                lease_released: true,
                dlq: false,
                queue: Some("q".to_string()),
                partition: Some("p".to_string()),
                pending_after: 3,
            },
            AckVerdict {
                success: false,
                error: Some("lease expired".to_string()),
                lease_released: false,
                dlq: true,
                queue: None,
                partition: None,
                pending_after: 0,
            },
        ];
        let answer: Value = serde_json::from_slice(&answer_json(&items, verdicts)).unwrap();
        assert_eq!(
            answer,
            json!([
                {"index": 0, "transactionId": "a \"quoted\" id", "partitionId": "9007199254740993",
                 "success": true, "error": null, "leaseReleased": true, "dlq": false},
                {"index": 1, "transactionId": "b", "partitionId": "9007199254740993",
                 "success": false, "error": "lease expired", "leaseReleased": false, "dlq": true},
            ])
        );
    }
}
