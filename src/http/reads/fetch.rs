//! `POST /api/v1/fetch`: offset reads. Each entry names a partition and a first offset;
//! the answer has one entry per asked entry, in order, with the partition's
//! `highWatermark` and `logStartOffset` and its records from that offset, at exactly the
//! offsets a pop reports. No lease, cursor or statistics is written: two readers get the
//! same answer, and no consumer group sees a fetch. With `frames=true` the answer is the
//! framed `QPF1` body of [`super::fetch_framed`]: the stored segments, passed through.

use actix_web::{web, HttpRequest, HttpResponse};

use super::fetch_framed::framed_answer;
use super::fetch_render::answer;
use super::fetch_request::FetchRequest;
use crate::db::reads::fetch::{fetch as read_entries, FetchAsk, FetchBounds};
use crate::http::binary::qpf1::CONTENT_TYPE as FRAMED;
use crate::http::body::read_body;
use crate::http::error::ApiError;
use crate::http::query::Query;
use crate::http::state::AppState;

/// Most stored segments one call reads: a bound on the work of a call over a backlog of
/// tiny segments, whose byte budget alone would let it open a hundred thousand blobs. A
/// reader that wants more asks again from its `nextOffset`.
const MAX_CALL_SEGMENTS: i32 = 10_000;

/// The handler.
#[utoipa::path(
    post,
    path = "/api/v1/fetch",
    tag = "reads",
    request_body = crate::http::openapi::read_schemas::FetchBody,
    params(crate::http::openapi::params::FetchQuery),
    responses(
        (status = 200, description = "one answer entry per asked entry, in order: `{entries: [{queue, partition, partitionId, highWatermark, logStartOffset, records: [{offset, transactionId, payload, ts}], nextOffset?, error?: OFFSET_OUT_OF_RANGE | UNKNOWN_TOPIC_OR_PARTITION}]}`; with `frames=true`, `application/x-queen-pop`: a `QPF1` body (wire contract 3.1) whose own keys are `{entries: [{queue, partition, partitionId, highWatermark, logStartOffset, recordCount, nextOffset?, error?}]}` and whose claims, one per entry with records, carry the stored segments whole, budgets counted in stored bytes", body = Object),
        (status = 400, description = "bad input (more than 1024 entries, a malformed entry, a `frames` that is not a boolean)", body = crate::http::openapi::schemas::ErrorBody),
        (status = 500, description = "database or storage failure", body = crate::http::openapi::schemas::ErrorBody)
    )
)]
pub async fn fetch(
    state: web::Data<AppState>,
    req: HttpRequest,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    let framed = Query::parse(req.query_string())?.flag("frames", false)?;
    let body = read_body(payload, state.broker.config.http.max_body_bytes).await?;
    let request = FetchRequest::parse(&body)?;
    let tenant = state.tenant(&req);
    let asks: Vec<FetchAsk<'_>> = request
        .entries
        .iter()
        .map(|e| FetchAsk {
            queue: e.queue.as_str(),
            partition: e.partition.as_str(),
            offset: e.offset,
            max_bytes: e.max_bytes,
        })
        .collect();
    let bounds = FetchBounds {
        call_bytes: request.max_bytes,
        call_segments: MAX_CALL_SEGMENTS,
    };
    let mut conn = state.broker.db.conn().await?;
    let fetched = read_entries(&mut conn, tenant.as_str(), &asks, bounds).await?;
    drop(conn);
    let key = state.broker.config.push.payload_key.as_ref();
    if framed {
        let body = framed_answer(&request, &fetched, key).map_err(ApiError::Corrupt)?;
        return Ok(HttpResponse::Ok().content_type(FRAMED).body(body));
    }
    let body = answer(&request, &fetched, key).map_err(ApiError::Corrupt)?;
    Ok(HttpResponse::Ok()
        .content_type("application/json")
        .body(body))
}
