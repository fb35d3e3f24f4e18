//! `POST /api/v1/push`: validate every item of a JSON or `QPB1` body (dispatched on the
//! magic, not the content type), store all or nothing, answer one object per item in
//! request order (or, with `QPB1` flag 2, the totals).

use std::borrow::Cow;

use actix_web::{web, HttpRequest, HttpResponse};
use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::json;
use serde_json::value::RawValue;
use uuid::Uuid;

use super::binary::qpb1;
use super::body::read_body;
use super::error::ApiError;
use super::json_field::JsonField;
use super::json_out::{number, optional_string, string};
use super::state::AppState;
use crate::domain::{
    NameError, PartitionName, PushItem, PushLimits, PushOutcome, PushStatus, PushTally, QueueName,
};
use crate::log::spool::intake::{self, Accepted};

/// Largest transaction id: the stored frame's `u16` length prefix.
const MAX_TRANSACTION_ID_BYTES: usize = 65_535;

/// One pushed item as sent, before validation (also the items of a transaction's push).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct RawItem<'a> {
    #[serde(borrow)]
    queue: Option<JsonField<'a>>,
    #[serde(borrow)]
    partition: Option<JsonField<'a>>,
    #[serde(borrow)]
    payload: Option<&'a RawValue>,
    #[serde(borrow)]
    transaction_id: Option<JsonField<'a>>,
    #[serde(borrow)]
    trace_id: Option<JsonField<'a>>,
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
        (status = 500, description = "database or storage failure", body = crate::http::openapi::schemas::ErrorBody),
        (status = 503, description = "database unavailable, and the push spool full or off", body = crate::http::openapi::schemas::ErrorBody)
    )
)]
pub async fn push(
    state: web::Data<AppState>,
    req: HttpRequest,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    let limit = state.broker.config.http.max_body_bytes;
    let caps = state.broker.config.push.limits;
    let body = read_body(payload, limit).await?;
    if body.starts_with(b"QPB") {
        return push_binary(&state, &req, &body, limit, caps).await;
    }
    if body.starts_with(b"QTB1") {
        return Err(ApiError::bad_request(
            "binary push bodies are not supported by this broker yet; send JSON",
        ));
    }
    let mut items = decode_json(&body, caps)?;
    stamp(&mut items, state.producer(&req));

    let accepted = intake::push(
        &state.broker,
        &state.tenant(&req),
        items,
        Vec::new(),
        state.broker.config.push.zstd_level,
    )
    .await?;
    Ok(match accepted {
        Accepted::Stored(outcomes) => answered(&outcomes),
        Accepted::Buffered(ids) => HttpResponse::Created().json(buffered(&ids)),
    })
}

/// A `QPB1` body: decoded into the same items, stored the same way; flag-8 groups are
/// stored as the client compressed them.
async fn push_binary(
    state: &AppState,
    req: &HttpRequest,
    body: &[u8],
    limit: usize,
    caps: PushLimits,
) -> Result<HttpResponse, ApiError> {
    let mut decoded =
        qpb1::decode(body, limit, caps).map_err(|e| ApiError::bad_request(e.to_string()))?;
    stamp(&mut decoded.items, state.producer(req));
    let accepted = intake::push(
        &state.broker,
        &state.tenant(req),
        decoded.items,
        decoded.prebuilt,
        state.broker.config.push.zstd_level,
    )
    .await?;
    let outcomes = match accepted {
        Accepted::Stored(outcomes) => outcomes,
        Accepted::Buffered(ids) if decoded.counts_only => {
            return Ok(HttpResponse::Created().json(json!({
                "count": ids.len(),
                "queued": 0,
                "duplicate": 0,
                "error": 0,
                "buffered": ids.len(),
            })));
        }
        Accepted::Buffered(ids) => return Ok(HttpResponse::Created().json(buffered(&ids))),
    };
    if decoded.counts_only {
        let count = |f: fn(&PushStatus) -> bool| outcomes.iter().filter(|o| f(&o.status)).count();
        return Ok(HttpResponse::Created().json(json!({
            "count": outcomes.len(),
            "queued": count(|s| *s == PushStatus::Queued),
            "duplicate": count(|s| *s == PushStatus::Duplicate),
            "error": count(|s| matches!(s, PushStatus::Full { .. })),
        })));
    }
    Ok(answered(&outcomes))
}

/// Decodes and validates a JSON push body `{"items": [...]}` under `caps`: the items are
/// counted as they are parsed, so a body of a million `{}` is refused at the cap instead of
/// costing 150 bytes of memory for each of its 3 bytes.
pub fn decode_json(body: &[u8], caps: PushLimits) -> Result<Vec<PushItem>, ApiError> {
    if body.is_empty() {
        return Err(ApiError::bad_request("request body must be a JSON object"));
    }
    let mut de = serde_json::Deserializer::from_slice(body);
    let raw = BodySeed(caps.max_messages)
        .deserialize(&mut de)
        .and_then(|raw| de.end().map(|()| raw))
        .map_err(|e| ApiError::bad_request(format!("invalid JSON body: {e}")))?;
    let mut tally = PushTally::new(caps);
    let mut names = LastNames::default();
    let mut items: Vec<PushItem> = Vec::with_capacity(raw.len());
    for (i, raw) in raw.into_iter().enumerate() {
        let item = validate(i, raw, &mut names)?;
        let counted = items
            .last()
            .is_some_and(|last| last.queue == item.queue && last.partition == item.partition);
        if !counted {
            tally
                .partition(&item.queue, &item.partition)
                .map_err(|e| ApiError::bad_request(e.to_string()))?;
        }
        items.push(item);
    }
    Ok(items)
}

/// The push body's object: `items` read through [`ItemsSeed`], other keys skipped.
struct BodySeed(usize);

impl<'de> DeserializeSeed<'de> for BodySeed {
    type Value = Vec<RawItem<'de>>;

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for BodySeed {
    type Value = Vec<RawItem<'de>>;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("an object with an items array")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut items = None;
        while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            if key == "items" {
                if items.is_some() {
                    return Err(de::Error::duplicate_field("items"));
                }
                items = Some(map.next_value_seed(ItemsSeed(self.0))?);
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        items.ok_or_else(|| de::Error::missing_field("items"))
    }
}

/// The `items` array, refused as soon as it holds more than the cap.
struct ItemsSeed(usize);

impl<'de> DeserializeSeed<'de> for ItemsSeed {
    type Value = Vec<RawItem<'de>>;

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for ItemsSeed {
    type Value = Vec<RawItem<'de>>;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("an array of push items")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element::<RawItem>()? {
            if items.len() == self.0 {
                return Err(de::Error::custom(crate::domain::LimitError::Messages {
                    max: self.0,
                }));
            }
            items.push(item);
        }
        Ok(items)
    }
}

/// One answer object per item, in request order (decision 9.1: camelCase keys), as the
/// body of a `201`.
fn answered(outcomes: &[PushOutcome]) -> HttpResponse {
    HttpResponse::Created()
        .content_type("application/json")
        .body(answer_json(outcomes))
}

/// The JSON array of the items' answers, written straight into one buffer: each object
/// has the same keys, in the same order, as a derived `Serialize` would write, but the
/// keys go in as literals instead of through the string escaper, and the numbers through
/// `itoa` (serde's path was 6 % of the broker's push profile at batch 100).
fn answer_json(outcomes: &[PushOutcome]) -> Vec<u8> {
    let mut out = Vec::with_capacity(16 + outcomes.len() * 160);
    let mut uuid = Uuid::encode_buffer();
    out.push(b'[');
    for (index, o) in outcomes.iter().enumerate() {
        if index > 0 {
            out.push(b',');
        }
        out.extend_from_slice(b"{\"index\":");
        number(&mut out, index);
        out.extend_from_slice(b",\"status\":\"");
        out.extend_from_slice(o.status.wire().as_bytes());
        out.extend_from_slice(b"\",\"transactionId\":");
        string(&mut out, &o.transaction_id);
        out.extend_from_slice(b",\"messageId\":\"");
        out.extend_from_slice(o.message_id.hyphenated().encode_lower(&mut uuid).as_bytes());
        out.extend_from_slice(b"\",\"partitionId\":\"");
        number(&mut out, o.partition_id);
        out.extend_from_slice(b"\",\"offset\":");
        number(&mut out, o.offset);
        out.extend_from_slice(b",\"error\":");
        optional_string(&mut out, o.status.error().as_deref());
        out.push(b'}');
    }
    out.push(b']');
    out
}

/// One answer object per item of a spooled push: `buffered`, with the transaction id and
/// message id it will be stored under (no partition id or offset yet: the replay assigns
/// them). The published clients count any status other than `queued`, `duplicate` and
/// `failed` as neither success nor failure, and raise nothing.
fn buffered(ids: &[(String, Uuid)]) -> Vec<BufferedAnswer<'_>> {
    ids.iter()
        .enumerate()
        .map(|(index, (transaction_id, message_id))| BufferedAnswer {
            index,
            status: "buffered",
            transaction_id,
            message_id: *message_id,
        })
        .collect()
}

/// One spooled item's answer.
#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct BufferedAnswer<'a> {
    index: usize,
    status: &'static str,
    transaction_id: &'a str,
    message_id: Uuid,
}

/// The queue and partition names of the item validated last: the items of a request
/// mostly share them, and a repeat costs a comparison instead of a check and a copy.
#[derive(Default)]
pub(super) struct LastNames {
    queue: Option<QueueName>,
    partition: Option<PartitionName>,
}

impl LastNames {
    fn queue(&mut self, text: &str) -> Result<QueueName, NameError> {
        reuse(&mut self.queue, text, QueueName::as_str, |t| {
            QueueName::parse(t)
        })
    }

    fn partition(&mut self, text: &str) -> Result<PartitionName, NameError> {
        reuse(&mut self.partition, text, PartitionName::as_str, |t| {
            PartitionName::parse(t)
        })
    }
}

/// `last` when it is `text`, else `text` parsed (and kept as the new last).
fn reuse<T: Clone>(
    last: &mut Option<T>,
    text: &str,
    as_str: fn(&T) -> &str,
    parse: fn(&str) -> Result<T, NameError>,
) -> Result<T, NameError> {
    match last {
        Some(name) if as_str(name) == text => Ok(name.clone()),
        _ => {
            let name = parse(text)?;
            *last = Some(name.clone());
            Ok(name)
        }
    }
}

/// Validates item `index` into a [`PushItem`]; errors name `items[index].<field>`.
pub(super) fn validate<'a>(
    index: usize,
    raw: RawItem<'a>,
    names: &mut LastNames,
) -> Result<PushItem, ApiError> {
    let field = |name: &str| format!("items[{index}].{name}");
    let text =
        |name: &str, value: Option<JsonField<'a>>| -> Result<Option<Cow<'a, str>>, ApiError> {
            JsonField::text(value)
                .map_err(|_| ApiError::bad_request(format!("{} must be a string", field(name))))
        };
    let queue = text("queue", raw.queue)?
        .ok_or_else(|| ApiError::bad_request(format!("{} is required", field("queue"))))?;
    let queue = names
        .queue(&queue)
        .map_err(|e| ApiError::bad_request(format!("{}: {e}", field("queue"))))?;
    let partition = match text("partition", raw.partition)? {
        None => PartitionName::default_partition(),
        Some(p) => names
            .partition(&p)
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
        transaction_id: transaction_id.map(Cow::into_owned),
        trace_id,
        producer: None,
    })
}

/// Stamps the request's producer (see [`AppState::producer`]) on every item.
pub(crate) fn stamp(items: &mut [PushItem], producer: Option<std::sync::Arc<str>>) {
    if producer.is_some() {
        for item in items {
            item.producer = producer.clone();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    fn outcome(status: PushStatus, transaction_id: &str, offset: i64) -> PushOutcome {
        PushOutcome {
            status,
            transaction_id: transaction_id.to_string(),
            message_id: Uuid::from_u128(0x0192_0000_0000_7000_8000_0000_0000_00ab),
            partition_id: 9_007_199_254_740_993,
            offset,
            txn_key: 0,
            dedup_window_secs: 0,
        }
    }

    #[test]
    fn the_answer_is_one_object_per_item_with_every_key_and_escaped_ids() {
        let outcomes = [
            outcome(PushStatus::Queued, "plain", 0),
            outcome(PushStatus::Duplicate, "quote \" back\\slash é \u{1}", 7),
            outcome(PushStatus::Full { max_size: 3 }, "t", 8),
        ];
        let bytes = answer_json(&outcomes);
        let answer: Value = serde_json::from_slice(&bytes).expect("the answer is JSON");
        let id = "01920000-0000-7000-8000-0000000000ab";
        assert_eq!(
            answer,
            json!([
                {"index": 0, "status": "queued", "transactionId": "plain", "messageId": id,
                 "partitionId": "9007199254740993", "offset": 0, "error": null},
                {"index": 1, "status": "duplicate", "transactionId": "quote \" back\\slash é \u{1}",
                 "messageId": id, "partitionId": "9007199254740993", "offset": 7, "error": null},
                {"index": 2, "status": "failed", "transactionId": "t", "messageId": id,
                 "partitionId": "9007199254740993", "offset": 8,
                 "error": "queue is full: maxSize is 3 messages and this push would exceed it"},
            ])
        );
        assert_eq!(answer_json(&[]), b"[]");
    }
}
