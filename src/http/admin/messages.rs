//! Messages (contract §4.3): listing with filters, one message with its payload, and delete.
//!
//! A message is (partition, offset). Listing and status come from SQL over segment rows and
//! cursors; ids, transaction ids and payloads are read here out of the segment blobs. Status
//! is the queue-mode view (`pending`, `processing`, `completed`); `busStatus` tells whether
//! every other group is past the message. A delete erases the message's payload inside its
//! segment (offsets stay dense, so the frame stays and can still be acked) and removes its
//! dead letters: see `sql/functions/message_segment_lock_v1.sql`.

use std::collections::HashMap;

use actix_web::{web, HttpRequest, HttpResponse};
use serde_json::json;
use tracing::instrument;

use super::{frame_at, iso, optional_timestamp, partition_id, queue_name, transaction_id};
use crate::db::admin::messages as db;
use crate::domain::PartitionName;
use crate::http::error::ApiError;
use crate::http::query::Query;
use crate::http::state::AppState;
use crate::segment::{
    open_blob, slice_frames, BlobError, Codec, FrameIter, NewFrame, SegmentBuilder,
};

/// Default page size (the old server's).
const DEFAULT_LIMIT: u64 = 200;
/// Largest page.
const MAX_LIMIT: u64 = 1000;
/// zstd level of a rewritten segment (the push path's default speed).
const REWRITE_ZSTD_LEVEL: i32 = 1;

fn corrupt(e: BlobError) -> ApiError {
    ApiError::Corrupt(Box::new(e))
}

/// `GET /api/v1/messages?queue=&partition=&ns=&task=&status=&from=&to=&limit=&offset=`.
#[instrument(skip_all)]
#[utoipa::path(
    get,
    path = "/api/v1/messages",
    tag = "messages admin",
    params(crate::http::openapi::params::MessagesQuery),
    responses(
        (status = 200, description = "messages newest first", body = Object),
        (status = 400, description = "bad input", body = crate::http::openapi::schemas::ErrorBody),
        (status = 500, description = "database or storage failure", body = crate::http::openapi::schemas::ErrorBody)
    )
)]
pub async fn list(state: web::Data<AppState>, req: HttpRequest) -> Result<HttpResponse, ApiError> {
    let query = Query::parse(req.query_string())?;
    let queue = query.text("queue").map(queue_name).transpose()?;
    let partition = query
        .text("partition")
        .map(PartitionName::parse)
        .transpose();
    let partition = partition.map_err(|e| ApiError::bad_request(e.to_string()))?;
    let status = match query.text("status") {
        None => None,
        Some(s @ ("pending" | "processing" | "completed")) => Some(s),
        Some(other) => {
            return Err(ApiError::bad_request(format!(
                "status must be pending, processing or completed, got {other:?}"
            )))
        }
    };
    let filter = db::Filter {
        queue: queue.as_ref().map(|q| q.as_str()),
        partition: partition.as_ref().map(PartitionName::as_str),
        namespace: query.text("ns").or(query.text("namespace")),
        task: query.text("task"),
        status,
        from: optional_timestamp(&query, "from")?,
        to: optional_timestamp(&query, "to")?,
    };
    let limit = query.number("limit", DEFAULT_LIMIT, 1, MAX_LIMIT)? as i32;
    let offset = query.number("offset", 0, 0, i32::MAX as u64)? as i32;

    let tenant = state.tenant(&req);
    let mut conn = state.broker.db.conn().await?;
    let rows = db::list(&mut conn, tenant.as_str(), &filter, limit, offset).await?;
    drop(conn);

    // Each segment arrives once (on its first listed message): open it once.
    let mut segments: HashMap<(i64, i64), (Vec<u8>, Option<String>)> = HashMap::new();
    let mut messages = Vec::with_capacity(rows.len());
    for row in &rows {
        let key = (row.partition_id, row.segment_base);
        if let Some((codec, producer, blob)) = &row.segment {
            let raw = open_blob(Codec::from_i16(*codec).map_err(corrupt)?, blob)
                .map_err(corrupt)?
                .into_owned();
            segments.insert(key, (raw, producer.clone()));
        }
        let (raw, segment_producer) = segments
            .get(&key)
            .ok_or_else(|| corrupt(BlobError::ShortSegment))?;
        let index = usize::try_from(row.offset - row.segment_base)
            .map_err(|_| corrupt(BlobError::ShortSegment))?;
        let frame = slice_frames(raw, index, 1).map_err(corrupt)?[0];
        messages.push(json!({
            "id": frame.message_id.to_string(),
            "transactionId": frame.transaction_id,
            "partitionId": row.partition_id.to_string(),
            "queuePath": format!("{}/{}", row.queue, row.partition),
            "queue": row.queue,
            "partition": row.partition,
            "namespace": row.namespace,
            "task": row.task,
            "offset": row.offset,
            "status": row.status,
            "queueStatus": row.status,
            "busStatus": row.bus_status,
            "traceId": frame.trace_id.map(|t| t.to_string()),
            "producerSub": frame.producer.or(segment_producer.as_deref()),
            "queuePriority": row.priority,
            "createdAt": iso(&row.created_at),
            "leaseExpiresAt": row.lease_expires_at.as_ref().map(iso),
        }));
    }
    Ok(HttpResponse::Ok().json(json!({
        "messages": messages,
        "mode": {"statusOf": "__QUEUE_MODE__", "busStatus": "every other consumer group"},
    })))
}

/// `GET /api/v1/messages/{partitionId}/{transactionId}`: the message with its payload;
/// 404 `{"error":"Message not found"}`.
#[instrument(skip_all)]
#[utoipa::path(
    get,
    path = "/api/v1/messages/{partition_id}/{transaction_id}",
    tag = "messages admin",
    params(
        ("partition_id" = i64, Path, minimum = 1, description = "Partition id (a positive integer, as a pop answers it)"),
        ("transaction_id" = String, Path, min_length = 1, description = "Message transaction id")
    ),
    responses(
        (status = 200, description = "the message", body = Object),
        (status = 400, description = "bad input", body = crate::http::openapi::schemas::ErrorBody),
        (status = 404, description = "Message not found", body = crate::http::openapi::schemas::ErrorBody),
        (status = 500, description = "database or storage failure", body = crate::http::openapi::schemas::ErrorBody)
    )
)]
pub async fn detail(
    state: web::Data<AppState>,
    req: HttpRequest,
    path: web::Path<(String, String)>,
) -> Result<HttpResponse, ApiError> {
    let (pid, txn) = path.into_inner();
    let pid = partition_id(&pid)?;
    let txn = transaction_id(&txn)?;
    let tenant = state.tenant(&req);
    let mut conn = state.broker.db.conn().await?;
    let found = db::get(&mut conn, tenant.as_str(), pid, txn).await?;
    drop(conn);
    let m = found.ok_or_else(|| ApiError::NotFound("Message not found".into()))?;
    let key = state.broker.config.push.payload_key.as_ref();
    let frame = frame_at(m.codec, &m.blob, m.offset - m.segment_base, key)?;
    Ok(HttpResponse::Ok().json(json!({
        "id": frame.message_id.to_string(),
        "transactionId": txn,
        "partitionId": pid.to_string(),
        "queuePath": format!("{}/{}", m.queue, m.partition),
        "queue": m.queue,
        "partition": m.partition,
        "namespace": m.namespace,
        "task": m.task,
        "offset": m.offset,
        "payload": frame.payload,
        "data": frame.payload,
        "status": m.status,
        "errorMessage": m.error_message,
        "retryCount": m.retry_count.unwrap_or(0),
        "traceId": frame.trace_id.map(|t| t.to_string()),
        "producerSub": frame.producer.or(m.producer),
        "queuePriority": m.priority,
        "createdAt": iso(&m.created_at),
        "leaseExpiresAt": m.lease_expires_at.as_ref().map(iso),
        "queueConfig": m.queue_config,
        "consumerGroups": m.consumer_groups,
    })))
}

/// `DELETE /api/v1/messages/{partitionId}/{transactionId}`: erases the payload (the frame and
/// its offset stay) and removes the message's dead letters; 404 when unknown.
#[instrument(skip_all)]
#[utoipa::path(
    delete,
    path = "/api/v1/messages/{partition_id}/{transaction_id}",
    tag = "messages admin",
    params(
        ("partition_id" = i64, Path, minimum = 1, description = "Partition id (a positive integer, as a pop answers it)"),
        ("transaction_id" = String, Path, min_length = 1, description = "Message transaction id")
    ),
    responses(
        (status = 200, description = "erased", body = Object),
        (status = 400, description = "bad input", body = crate::http::openapi::schemas::ErrorBody),
        (status = 404, description = "Message not found", body = crate::http::openapi::schemas::ErrorBody),
        (status = 500, description = "database or storage failure", body = crate::http::openapi::schemas::ErrorBody)
    )
)]
pub async fn delete(
    state: web::Data<AppState>,
    req: HttpRequest,
    path: web::Path<(String, String)>,
) -> Result<HttpResponse, ApiError> {
    let (pid, txn) = path.into_inner();
    let pid = partition_id(&pid)?;
    let txn = transaction_id(&txn)?;
    let tenant = state.tenant(&req);
    let mut conn = state.broker.db.conn().await?;
    let outcome = db::erase(&mut conn, tenant.as_str(), pid, txn, |locked| {
        erase_frame(locked.2, &locked.3, locked.0 - locked.1)
    })
    .await?;
    drop(conn);
    let dead_letters = outcome
        .ok_or_else(|| ApiError::NotFound("Message not found".into()))?
        .map_err(corrupt)?;
    Ok(HttpResponse::Ok().json(json!({
        "success": true,
        "partitionId": pid.to_string(),
        "transactionId": txn,
        "deadLettersRemoved": dead_letters,
        "message": "Message deleted: its payload is erased, its offset stays in the partition",
    })))
}

/// The segment rebuilt with frame `index`'s payload emptied (every other frame as stored).
fn erase_frame(codec: i16, blob: &[u8], index: i64) -> Result<(i16, Vec<u8>), BlobError> {
    let raw = open_blob(Codec::from_i16(codec)?, blob)?;
    let mut builder = SegmentBuilder::new();
    for (i, frame) in FrameIter::new(&raw).enumerate() {
        let frame = frame?;
        if i as i64 == index {
            builder.push(&NewFrame {
                message_id: frame.message_id,
                trace_id: frame.trace_id,
                transaction_id: frame.transaction_id,
                producer: frame.producer,
                payload: b"",
            })?;
        } else {
            builder.push_stored(&frame);
        }
    }
    let segment = builder.finish(REWRITE_ZSTD_LEVEL)?;
    Ok((segment.codec.as_i16(), segment.bytes))
}
