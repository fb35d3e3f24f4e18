//! The dead-letter queue (contract §4.2) and message retry (§4.3, decision 9.6).
//!
//! Dead letters keep a copy of the segment that held the message; the payload is read out
//! of it here, in Rust. A retry appends a copy of the message to its partition as a new
//! message (new message id, a new transaction id naming the original's, see
//! [`retry_transaction_id`]; same payload and trace id; a sealed payload is sealed again
//! for the new id), removes its dead letters, and wakes the queue's consumers like a push.
//! The original stays where it is under its own transaction id, so every consumer group
//! can still ack it (README, "Dead letters and retries").

use actix_web::{web, HttpRequest, HttpResponse};
use serde_json::{json, Value};
use tracing::instrument;
use uuid::Uuid;

use super::{frame_at, group_name, iso, optional_timestamp, partition_id, transaction_id};
use crate::actors::ring::PartitionRef;
use crate::actors::wake_gate::WakeSource;
use crate::db::admin::dlq as db;
use crate::domain::{PartitionName, QueueName};
use crate::http::error::ApiError;
use crate::http::query::Query;
use crate::http::state::AppState;
use crate::log::spool::order;
use crate::segment::{NewFrame, PayloadKey, SegmentBuilder};

/// Default page size (the client's default).
const DEFAULT_LIMIT: u64 = 100;
/// Largest page: each row carries a segment copy to open.
const MAX_LIMIT: u64 = 1000;
/// Segment-copy bytes one listing reads at most (past its first row): each dead letter
/// carries the whole segment that held it, so 1,000 of them could be gigabytes in one
/// answer's memory. A page cut short says where the next starts (`nextOffset`).
const MAX_PAGE_BYTES: i64 = 16 << 20;
/// zstd level of a requeued one-message segment (the push path's default speed).
const REQUEUE_ZSTD_LEVEL: i32 = 1;
/// Between the original's transaction id and the copy's message id in the copy's
/// transaction id.
const RETRY_MARK: &str = ":retry:";
/// The longest transaction id a frame holds (its `u16` length prefix).
const MAX_TRANSACTION_ID_BYTES: usize = u16::MAX as usize;

/// `GET /api/v1/dlq?queue=&consumerGroup=&partition=&from=&to=&limit=&offset=`:
/// `{messages, total, nextOffset}`, newest failure first, each message with its payload;
/// a page holds at most [`MAX_PAGE_BYTES`] of segment copies past its first row, so it may
/// end before `limit` (`nextOffset`: where the next page starts, null at the end).
#[instrument(skip_all)]
#[utoipa::path(
    get,
    path = "/api/v1/dlq",
    tag = "dead letters",
    params(crate::http::openapi::params::DlqQuery),
    responses(
        (status = 200, description = "{messages, total}", body = Object),
        (status = 400, description = "bad input", body = crate::http::openapi::schemas::ErrorBody),
        (status = 500, description = "database or storage failure", body = crate::http::openapi::schemas::ErrorBody)
    )
)]
pub async fn list(state: web::Data<AppState>, req: HttpRequest) -> Result<HttpResponse, ApiError> {
    let query = Query::parse(req.query_string())?;
    let queue = query.text("queue").map(QueueName::parse).transpose();
    let queue = queue.map_err(|e| ApiError::bad_request(e.to_string()))?;
    let group = query.text("consumerGroup").map(group_name).transpose()?;
    let partition = query
        .text("partition")
        .map(PartitionName::parse)
        .transpose();
    let partition = partition.map_err(|e| ApiError::bad_request(e.to_string()))?;
    let from = optional_timestamp(&query, "from")?;
    let to = optional_timestamp(&query, "to")?;
    let limit = query.number("limit", DEFAULT_LIMIT, 1, MAX_LIMIT)? as i32;
    let offset = query.number("offset", 0, 0, i32::MAX as u64)? as i32;
    let filter = db::Filter {
        queue: queue.as_ref().map(QueueName::as_str),
        group: group.as_ref().map(|g| g.as_str()),
        partition: partition.as_ref().map(PartitionName::as_str),
        from,
        to,
    };

    let tenant = state.tenant(&req);
    let mut conn = state.broker.db.conn().await?;
    let page = (limit, offset);
    let listed = db::list(&mut conn, tenant.as_str(), &filter, page, MAX_PAGE_BYTES).await;
    let (letters, total) = listed?;
    drop(conn);
    let key = state.broker.config.push.payload_key.as_ref();
    let messages: Vec<Value> = letters.iter().map(|d| render(d, key)).collect();
    let next = i64::from(offset) + letters.len() as i64;
    let next_offset = (next < total).then_some(next);
    Ok(HttpResponse::Ok().json(json!({
        "messages": messages,
        "total": total,
        "nextOffset": next_offset,
    })))
}

/// One dead letter as listed. A letter whose copy cannot be read here (a damaged segment
/// dead-lettered for that reason, or a payload sealed under another node's key) is listed
/// with `data: null` and `unreadable` saying why, so one such letter never hides the rest.
fn render(d: &db::DeadLetter, key: Option<&PayloadKey>) -> Value {
    let m = match frame_at(d.codec, &d.blob, d.offset - d.segment_base, key) {
        Ok(m) => m,
        Err(e) => {
            let cause =
                std::error::Error::source(&e).map_or_else(|| e.to_string(), |c| c.to_string());
            return json!({
                "id": null,
                "transactionId": d.transaction_id,
                "partitionId": d.partition_id.to_string(),
                "queue": d.queue,
                "partition": d.partition,
                "consumerGroup": d.consumer_group,
                "offset": d.offset,
                "errorMessage": d.error_message,
                "retryCount": d.retry_count,
                "data": null,
                "unreadable": cause,
                "traceId": null,
                "producerSub": d.producer,
                "createdAt": iso(&d.created_at),
                "failedAt": iso(&d.failed_at),
            });
        }
    };
    json!({
        "id": m.message_id.to_string(),
        "transactionId": d.transaction_id,
        "partitionId": d.partition_id.to_string(),
        "queue": d.queue,
        "partition": d.partition,
        "consumerGroup": d.consumer_group,
        "offset": d.offset,
        "errorMessage": d.error_message,
        "retryCount": d.retry_count,
        "data": m.payload,
        "traceId": m.trace_id.map(|t| t.to_string()),
        "producerSub": m.producer.or_else(|| d.producer.clone()),
        "createdAt": iso(&d.created_at),
        "failedAt": iso(&d.failed_at),
    })
}

/// `POST /api/v1/messages/{partitionId}/{transactionId}/retry`: requeues a dead-lettered
/// message; 404 `{"error":"Message not found"}` when it has no dead letter.
#[instrument(skip_all)]
#[utoipa::path(
    post,
    path = "/api/v1/messages/{partition_id}/{transaction_id}/retry",
    tag = "dead letters",
    params(
        ("partition_id" = i64, Path, minimum = 1, description = "Partition id (a positive integer, as a pop answers it)"),
        ("transaction_id" = String, Path, min_length = 1, description = "Message transaction id")
    ),
    responses(
        (status = 200, description = "appended again", body = Object),
        (status = 400, description = "bad input", body = crate::http::openapi::schemas::ErrorBody),
        (status = 404, description = "no dead letter", body = crate::http::openapi::schemas::ErrorBody),
        (status = 500, description = "database or storage failure", body = crate::http::openapi::schemas::ErrorBody),
        (status = 503, description = "push maintenance is on, or the partition has spooled pushes not stored yet: retry later", body = crate::http::openapi::schemas::ErrorBody)
    )
)]
pub async fn retry(
    state: web::Data<AppState>,
    req: HttpRequest,
    path: web::Path<(String, String)>,
) -> Result<HttpResponse, ApiError> {
    let (pid, txn) = path.into_inner();
    let pid = partition_id(&pid)?;
    let txn = transaction_id(&txn)?;
    let not_found = || ApiError::NotFound("Message not found".into());

    let tenant = state.tenant(&req);
    let mut conn = state.broker.db.conn().await?;
    let letters = db::find(&mut conn, tenant.as_str(), pid, txn).await?;
    let letter = letters.first().ok_or_else(not_found)?;
    // The copy is appended directly: never past pushes the spool holds for its partition
    // (push maintenance, or records not replayed yet); 503, retryable, nothing changed.
    if let (Ok(queue), Ok(partition)) = (
        QueueName::parse(&letter.queue),
        PartitionName::parse(&letter.partition),
    ) {
        order::check(&state.broker, &tenant, [(&queue, &partition)])
            .map_err(|held| ApiError::Unavailable(held.to_string()))?;
    }
    let key = state.broker.config.push.payload_key.as_ref();
    let stored = frame_at(
        letter.codec,
        &letter.blob,
        letter.offset - letter.segment_base,
        key,
    )?;
    let message_id = Uuid::now_v7();
    let copy_txn = retry_transaction_id(txn, &message_id);
    let mut segment = SegmentBuilder::new();
    let framing = |e| ApiError::Corrupt(Box::new(e));
    match key.filter(|_| stored.encrypted) {
        // A sealed payload is bound to its message id: seal it again for the new one.
        Some(key) => segment
            .push_sealed(&NewFrame {
                message_id,
                trace_id: stored.trace_id,
                transaction_id: &copy_txn,
                producer: stored.producer.as_deref(),
                payload: &key.seal(&message_id, &stored.payload_bytes),
            })
            .map_err(framing)?,
        // The pushed bytes, not a re-serialisation: the retried message is the same document.
        None => segment
            .push(&NewFrame {
                message_id,
                trace_id: stored.trace_id,
                transaction_id: &copy_txn,
                producer: stored.producer.as_deref(),
                payload: &stored.payload_bytes,
            })
            .map_err(framing)?,
    }
    let blob = segment
        .finish(REQUEUE_ZSTD_LEVEL)
        .map_err(|e| ApiError::Corrupt(Box::new(e)))?;
    let requeued = db::requeue(
        &mut conn,
        tenant.as_str(),
        &db::Requeue {
            partition_id: pid,
            transaction_id: txn,
            new_transaction_id: &copy_txn,
            message_id,
            blob: &blob.bytes,
            codec: blob.codec.as_i16(),
            producer: letter.producer.as_deref(),
        },
    )
    .await?
    .ok_or_else(not_found)?;
    drop(conn);

    if let Ok(queue) = QueueName::parse(requeued.queue.as_str()) {
        let partition = PartitionRef {
            id: pid,
            name: requeued.partition.as_str().into(),
        };
        state
            .broker
            .mesh
            .push_landed(&tenant, &queue, &partition, requeued.offset, 1);
        state
            .broker
            .registry
            .push_landed(&tenant, &queue, partition, 1, WakeSource::Push);
    }
    Ok(HttpResponse::Ok().json(json!({
        "success": true,
        "partitionId": pid.to_string(),
        "transactionId": copy_txn,
        "messageId": message_id.to_string(),
        "queue": requeued.queue,
        "partition": requeued.partition,
        "offset": requeued.offset,
        "deadLettersRemoved": requeued.removed,
        "retryOf": { "transactionId": txn, "offset": requeued.retried_offset },
    })))
}

/// The transaction id of a retry's copy: `{original}:retry:{copy's message id}`, so it
/// names what it retries and is new (a message id is a fresh UUIDv7; a message can be
/// retried more than once, since a group that had not passed it may dead-letter it again).
/// An original too long to take the suffix within a frame's limit gives the bare message
/// id; the retry answer's `retryOf` still names the original.
fn retry_transaction_id(original: &str, message_id: &Uuid) -> String {
    let id = format!("{original}{RETRY_MARK}{message_id}");
    if id.len() <= MAX_TRANSACTION_ID_BYTES {
        id
    } else {
        message_id.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_retry_id_names_the_original_and_is_new_for_every_copy() {
        let (a, b) = (Uuid::now_v7(), Uuid::now_v7());
        let first = retry_transaction_id("order-7", &a);
        assert_eq!(first, format!("order-7:retry:{a}"));
        assert_ne!(first, retry_transaction_id("order-7", &b));
    }

    #[test]
    fn a_retry_id_that_would_overflow_a_frame_is_the_bare_message_id() {
        let id = Uuid::now_v7();
        let longest = "x".repeat(MAX_TRANSACTION_ID_BYTES - RETRY_MARK.len() - 36);
        assert_eq!(
            retry_transaction_id(&longest, &id).len(),
            MAX_TRANSACTION_ID_BYTES
        );
        let too_long = format!("{longest}y");
        assert_eq!(retry_transaction_id(&too_long, &id), id.to_string());
    }
}
