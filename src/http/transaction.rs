//! `POST /api/v1/transaction` with a JSON or a binary `QTB1` body: parse the bundle (400 for
//! anything malformed, nothing changed), apply it all or nothing, and answer HTTP 200 with a
//! JSON object, `success: false` included. The `kv` rider (in the JSON body or the `QTB1`
//! head) is checked as `POST /api/v1/kv` checks a call; its results follow every pushed
//! item's and ack's, and a lost `required` op answers `reason: "kv_precondition"`. A `QTB1` body becomes the same [`Bundle`]: its
//! head's operations first, then one push of every message of its groups, which is the
//! result order the contract gives for it (§2.12).

use actix_web::{web, HttpRequest, HttpResponse};
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{json, Value};

use super::ack::{self, RawAck};
use super::binary::qtb1;
use super::body::{parse_json, read_body};
use super::error::ApiError;
use super::push::{self, RawItem};
use super::state::AppState;
use crate::domain::kv::{parse_ops, KvBatch, KvOpKind};
use crate::domain::timers::{parse_ops as parse_timer_ops, TimerBatch};
use crate::log::transaction::{
    apply, Bundle, BundleAck, BundleOutcome, KvPrecondition, OpResult, Operation,
};

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawBundle {
    operations: Option<Box<RawValue>>,
    required_leases: Option<Value>,
    kv: Option<Value>,
    timers: Option<Value>,
}

#[derive(Deserialize)]
struct RawKind {
    #[serde(rename = "type")]
    kind: Option<Value>,
}

#[derive(Deserialize)]
struct RawPush<'a> {
    #[serde(borrow)]
    items: Option<Vec<RawItem<'a>>>,
}

/// The handler.
#[utoipa::path(
    post,
    path = "/api/v1/transaction",
    tag = "messages",
    request_body = crate::http::openapi::schemas::TransactionBody,
    responses(
        (status = 200, description = "success with results, or failure with nothing changed", body = Object),
        (status = 400, description = "bad input", body = crate::http::openapi::schemas::ErrorBody),
        (status = 409, description = "the commit of a bundle that writes keys got no answer: it may have applied; read before sending it again", body = crate::http::openapi::schemas::ErrorBody),
        (status = 500, description = "database or storage failure", body = crate::http::openapi::schemas::ErrorBody),
        (status = 503, description = "push maintenance is on, or a pushed partition has spooled pushes not stored yet: retry later, nothing changed", body = crate::http::openapi::schemas::ErrorBody)
    )
)]
pub async fn transaction(
    state: web::Data<AppState>,
    req: HttpRequest,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    let limit = state.broker.config.http.max_body_bytes;
    let body = read_body(payload, limit).await?;
    let (mut bundle, counts_only) = decode(&body, limit, state.broker.config.push.limits)?;
    let producer = state.producer(&req);
    for operation in &mut bundle.operations {
        if let Operation::Push(items) = operation {
            push::stamp(items, producer.clone());
        }
    }
    let outcome = apply(
        &state.broker,
        &state.tenant(&req),
        &bundle,
        state.broker.config.push.zstd_level,
    )
    .await?;
    let mut answer = render(&outcome);
    if counts_only {
        counts(&mut answer);
    }
    Ok(HttpResponse::Ok().json(answer))
}

/// Decodes a JSON or `QTB1` transaction body into its bundle (and whether flag 2 asked for
/// totals), held to the caps of one push request; every failure is a 400 and changes
/// nothing.
pub fn decode(
    body: &[u8],
    limit: usize,
    caps: crate::domain::PushLimits,
) -> Result<(Bundle, bool), ApiError> {
    let (bundle, counts_only) = if body.starts_with(qtb1::MAGIC) {
        parse_binary(body, limit, caps)?
    } else {
        (parse(body)?, false)
    };
    within_caps(&bundle, caps)?;
    Ok((bundle, counts_only))
}

/// Holds all of a bundle's pushes together to the caps of one push request, so a
/// transaction cannot create more partitions than a push may.
fn within_caps(bundle: &Bundle, caps: crate::domain::PushLimits) -> Result<(), ApiError> {
    let mut tally = crate::domain::PushTally::new(caps);
    for operation in &bundle.operations {
        if let Operation::Push(items) = operation {
            tally.messages(items.len())?;
            for item in items {
                tally.partition(&item.queue, &item.partition)?;
            }
        }
    }
    Ok(())
}

/// Parses a `QTB1` body: the JSON head (may be empty) and the pushes of its groups. The
/// client's compressed groups are re-framed by the bundle's push (a transaction appends
/// through the same staged push as JSON items), so their bytes are not kept as sent.
fn parse_binary(
    body: &[u8],
    limit: usize,
    caps: crate::domain::PushLimits,
) -> Result<(Bundle, bool), ApiError> {
    let decoded =
        qtb1::decode(body, limit, caps).map_err(|e| ApiError::bad_request(e.to_string()))?;
    let mut bundle = if decoded.head.is_empty() {
        Bundle::default()
    } else {
        parse_head(decoded.head)?
    };
    if !decoded.push.items.is_empty() {
        bundle.operations.push(Operation::Push(decoded.push.items));
    }
    Ok((bundle, decoded.counts_only))
}

/// The head of a `QTB1` body: a transaction body whose operations (possibly absent) hold
/// no push.
fn parse_head(head: &[u8]) -> Result<Bundle, ApiError> {
    let mut value: Value = parse_json(head)?;
    if let Value::Object(fields) = &mut value {
        fields
            .entry("operations")
            .or_insert_with(|| Value::Array(Vec::new()));
    }
    let bytes = serde_json::to_vec(&value).expect("a parsed JSON value serialises");
    parse(&bytes).map_err(|e| prefixed(e, "QTB1 head: "))
}

/// Flag 2 of `QTB1`: totals for pushes and acks in place of their per-operation results.
/// The `kv` rider's results are answers a caller reads, not counts: they stay, as
/// `results`, when there are any.
fn counts(answer: &mut Value) {
    let Some(Value::Array(results)) = answer.get_mut("results").map(Value::take) else {
        return;
    };
    let count = |kind: &str, status: Option<&str>| {
        results
            .iter()
            .filter(|r| r["type"] == kind)
            .filter(|r| status.map_or(true, |s| r["status"] == s))
            .filter(|r| kind != "ack" || r["success"] == true)
            .count()
    };
    let totals = [
        ("pushed", count("push", Some("queued"))),
        ("duplicate", count("push", Some("duplicate"))),
        ("acked", count("ack", None)),
    ];
    let kv: Vec<Value> = results
        .into_iter()
        .filter(|r| r["type"] == "kv" || r["type"] == "timer")
        .collect();
    if let Value::Object(fields) = answer {
        fields.remove("results");
        for (k, v) in totals {
            fields.insert(k.to_owned(), json!(v));
        }
        if !kv.is_empty() {
            fields.insert("results".to_owned(), Value::Array(kv));
        }
    }
}

/// Parses a JSON transaction body into a [`Bundle`]; every error is a 400 naming the field.
fn parse(body: &[u8]) -> Result<Bundle, ApiError> {
    let raw: RawBundle = parse_json(body)?;
    let operations = raw
        .operations
        .ok_or_else(|| ApiError::bad_request("operations is required"))?;
    let operations: Vec<Box<RawValue>> = serde_json::from_str(operations.get())
        .map_err(|_| ApiError::bad_request("operations must be an array"))?;
    let operations = operations
        .iter()
        .enumerate()
        .map(|(i, op)| operation(i, op))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Bundle {
        operations,
        required_leases: leases(raw.required_leases)?,
        kv: kv_rider(raw.kv)?,
        timers: timers_rider(raw.timers)?,
    })
}

fn operation(i: usize, op: &RawValue) -> Result<Operation, ApiError> {
    let at = |e: String| ApiError::bad_request(format!("operations[{i}]{e}"));
    let kind: RawKind =
        serde_json::from_str(op.get()).map_err(|_| at(" must be an object".to_owned()))?;
    match kind.kind {
        Some(Value::String(k)) if k == "push" => {
            let mut names = push::LastNames::default();
            let raw: RawPush =
                serde_json::from_str(op.get()).map_err(|e| at(format!(".items: {e}")))?;
            let items = raw
                .items
                .ok_or_else(|| at(".items is required".to_owned()))?
                .into_iter()
                .enumerate()
                .map(|(k, item)| push::validate(k, item, &mut names))
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| prefixed(e, &format!("operations[{i}].")))?;
            Ok(Operation::Push(items))
        }
        Some(Value::String(k)) if k == "ack" => {
            let raw: RawAck = serde_json::from_str(op.get()).map_err(|e| at(format!(": {e}")))?;
            let group = ack::group_of(raw.consumer_group.as_ref())
                .map_err(|e| prefixed(e, &format!("operations[{i}].")))?;
            let ack = ack::validate(raw, || format!("operations[{i}]."))?;
            Ok(Operation::Ack(BundleAck { group, ack }))
        }
        _ => Err(at(".type must be \"push\" or \"ack\"".to_owned())),
    }
}

fn prefixed(error: ApiError, prefix: &str) -> ApiError {
    match error {
        ApiError::BadRequest(text) => ApiError::BadRequest(format!("{prefix}{text}")),
        other => other,
    }
}

fn leases(value: Option<Value>) -> Result<Vec<String>, ApiError> {
    let bad = || ApiError::bad_request("requiredLeases must be an array of strings");
    match value {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(list)) => list
            .into_iter()
            .map(|l| match l {
                Value::String(s) => Ok(s),
                _ => Err(bad()),
            })
            .collect(),
        Some(_) => Err(bad()),
    }
}

/// The `kv` rider, checked exactly as `POST /api/v1/kv` checks a call (same bounds, same
/// reasons), or a 400 naming it. `getPrefix` is refused: its cost is not bounded by the
/// caller, and a bundle holds partition and key locks while it runs (the client refuses it
/// too).
fn kv_rider(value: Option<Value>) -> Result<KvBatch, ApiError> {
    let batch = match value {
        None | Some(Value::Null) => return Ok(KvBatch::default()),
        Some(ops) => parse_ops(&ops).map_err(|e| {
            let over = if e.too_large { "over a bound, " } else { "" };
            ApiError::bad_request(format!("kv: {over}{} ({})", e.detail, e.reason))
        })?,
    };
    if let Some(i) = batch
        .ops
        .iter()
        .position(|op| matches!(op.kind, KvOpKind::GetPrefix { .. }))
    {
        return Err(ApiError::bad_request(format!(
            "kv: op {i}: getPrefix is not allowed inside a transaction; use get or getMany \
             with explicit keys"
        )));
    }
    Ok(batch)
}

/// The `timers` rider, checked exactly as `POST /api/v1/timers` checks a call, or a 400
/// naming it.
fn timers_rider(value: Option<Value>) -> Result<TimerBatch, ApiError> {
    match value {
        None | Some(Value::Null) => Ok(TimerBatch::default()),
        Some(ops) => parse_timer_ops(&ops)
            .map_err(|e| ApiError::bad_request(format!("timers: {} ({})", e.detail, e.reason))),
    }
}

fn render(outcome: &BundleOutcome) -> Value {
    match outcome {
        BundleOutcome::Committed {
            transaction_id,
            results,
        } => json!({
            "success": true,
            "transactionId": transaction_id,
            "results": results.iter().enumerate().map(|(i, r)| result(i, r)).collect::<Vec<_>>(),
        }),
        BundleOutcome::RolledBack {
            transaction_id,
            error,
            failed_index,
        } => json!({
            "success": false,
            "transactionId": transaction_id,
            "error": error,
            "failedIndex": failed_index,
        }),
        BundleOutcome::PreconditionLost {
            transaction_id,
            lost,
        } => precondition_lost(transaction_id, lost),
    }
}

/// The answer the client returns instead of raising (contract §8): what lost, at its flat
/// index, with the key's current version and value.
fn precondition_lost(transaction_id: &uuid::Uuid, lost: &KvPrecondition) -> Value {
    json!({
        "success": false,
        "transactionId": transaction_id,
        "reason": "kv_precondition",
        "error": "a required kv precondition was not met; nothing was applied",
        "failedIndex": lost.failed_index,
        "kvReason": lost.kv_reason,
        "version": lost.version,
        "value": lost.value,
    })
}

fn result(index: usize, r: &OpResult) -> Value {
    match r {
        OpResult::Pushed(o) => json!({
            "index": index,
            "type": "push",
            "success": true,
            "status": o.status.wire(),
            "transactionId": o.transaction_id,
            "messageId": o.message_id,
            "partitionId": o.partition_id.to_string(),
            "offset": o.offset,
            "error": Value::Null,
        }),
        OpResult::Acked { ack, verdict } => json!({
            "index": index,
            "type": "ack",
            "success": verdict.success,
            "status": ack.status,
            "transactionId": ack.transaction_id,
            "partitionId": ack.partition_id.to_string(),
            "error": verdict.error,
            "leaseReleased": verdict.lease_released,
            "dlq": verdict.dlq,
        }),
        OpResult::Kv(answer) | OpResult::Timer(answer) => {
            let kind = if matches!(r, OpResult::Kv(_)) {
                "kv"
            } else {
                "timer"
            };
            let mut out = json!({ "index": index, "type": kind });
            if let (Value::Object(out), Value::Object(fields)) = (&mut out, answer) {
                out.extend(fields.iter().map(|(k, v)| (k.clone(), v.clone())));
            }
            out
        }
    }
}
