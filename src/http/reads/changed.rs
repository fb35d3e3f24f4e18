//! `POST /api/v1/partitions/changed`: the partitions of a queue written at or after a
//! time, paged by name, with a `safeTime` to pass as the next call's `since`. The
//! watermark is read before the pages, in a statement of its own, so that no write a page
//! misses can carry an earlier time, whichever node wrote it and however late it commits
//! (`sql/functions/partitions_safe_time_v1.sql` holds the argument).

use actix_web::{web, HttpRequest, HttpResponse};
use serde_json::{json, Value};

use super::changed_request::{parse, TIME_FORMAT};
use super::fetch_render::UNKNOWN;
use crate::db::reads::changed::{page, safe_time, PageAsk};
use crate::http::body::read_body;
use crate::http::error::ApiError;
use crate::http::state::AppState;

/// The handler.
#[utoipa::path(
    post,
    path = "/api/v1/partitions/changed",
    tag = "reads",
    request_body = crate::http::openapi::read_schemas::ChangedBody,
    responses(
        (status = 200, description = "`{safeTime, entries: [{queue, partitions: [{name, id, lastOffset, logStart, lastWriteAt}], next?, error?: UNKNOWN_TOPIC_OR_PARTITION}]}`, one entry per asked entry; times as `YYYY-MM-DDTHH:MM:SS.ffffffZ`", body = Object),
        (status = 400, description = "bad input (a malformed `since`, more than 64 entries)", body = crate::http::openapi::schemas::ErrorBody),
        (status = 500, description = "database failure", body = crate::http::openapi::schemas::ErrorBody)
    )
)]
pub async fn changed(
    state: web::Data<AppState>,
    req: HttpRequest,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    let body = read_body(payload, state.broker.config.http.max_body_bytes).await?;
    let entries = parse(&body)?;
    let tenant = state.tenant(&req);
    let mut conn = state.broker.db.conn().await?;
    // First, alone: the pages below must take their snapshots after it.
    let safe = safe_time(&mut conn).await?;
    let mut answers = Vec::with_capacity(entries.len());
    for entry in &entries {
        let ask = PageAsk {
            queue: entry.queue.as_str(),
            since: entry.since,
            after: entry.after.as_deref(),
            limit: entry.limit,
        };
        let Some(mut partitions) = page(&mut conn, tenant.as_str(), &ask).await? else {
            answers.push(json!({
                "queue": entry.queue.as_str(),
                "partitions": [],
                "error": UNKNOWN,
            }));
            continue;
        };
        let more = partitions.len() > entry.limit as usize;
        partitions.truncate(entry.limit as usize);
        let next = match partitions.last() {
            Some(last) if more => Value::String(last.name.clone()),
            _ => Value::Null,
        };
        let listed: Vec<Value> = partitions
            .iter()
            .map(|p| {
                json!({
                    "name": p.name,
                    "id": p.id.to_string(),
                    "lastOffset": p.last_offset,
                    "logStart": p.log_start,
                    "lastWriteAt": p.last_write_at.format(TIME_FORMAT).to_string(),
                })
            })
            .collect();
        answers.push(json!({
            "queue": entry.queue.as_str(),
            "partitions": listed,
            "next": next,
        }));
    }
    drop(conn);
    Ok(HttpResponse::Ok().json(json!({
        "safeTime": safe.format(TIME_FORMAT).to_string(),
        "entries": answers,
    })))
}
