//! `POST /streams/v1/cycle`: state ops, sink pushes and the ack of a prefix of the
//! source's leased batch, in one transaction (`log::streams`). A stale lease (expired,
//! replaced, released) or an ack whose `transactionId` is not the batch's message `count`
//! (a resent cycle that already applied) is `{success: false, error, code}` with nothing
//! written; a `count` beyond the batch, a partition not of the query's source queue or an
//! item refused by the push are 400s, an unknown query a 404, nothing written either.

use actix_web::{web, HttpRequest, HttpResponse};
use serde_json::json;

use crate::domain::streams::parse_cycle;
use crate::domain::PushTally;
use crate::http::error::ApiError;
use crate::http::push;
use crate::http::state::AppState;
use crate::log::streams::{apply, CycleOutcome};

/// The handler.
#[utoipa::path(
    post,
    path = "/streams/v1/cycle",
    tag = "streams",
    request_body = crate::http::openapi::streams_schemas::CycleBody,
    responses(
        (status = 200, description = "`{success: true}`, or `{success: false, error, code: lease | settled}` with nothing written", body = Object),
        (status = 400, description = "a malformed call, `ack.count` beyond the leased batch, a partition not of the source queue, a push refused; nothing written", body = crate::http::openapi::schemas::ErrorBody),
        (status = 404, description = "no such query for this tenant; nothing written", body = crate::http::openapi::schemas::ErrorBody),
        (status = 503, description = "push maintenance is on, or a sink partition has spooled pushes not stored yet: retry later, nothing written", body = crate::http::openapi::schemas::ErrorBody)
    )
)]
pub async fn cycle(
    state: web::Data<AppState>,
    req: HttpRequest,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    let mut cycle = parse_cycle(&super::body(&state, payload).await?)?;
    let mut tally = PushTally::new(state.broker.config.push.limits);
    tally.messages(cycle.pushes.len())?;
    for item in &cycle.pushes {
        tally.partition(&item.queue, &item.partition)?;
    }
    push::stamp(&mut cycle.pushes, state.producer(&req));
    let outcome = apply(
        &state.broker,
        &state.tenant(&req),
        &cycle,
        state.broker.config.push.zstd_level,
    )
    .await?;
    match outcome {
        CycleOutcome::Committed => Ok(HttpResponse::Ok().json(json!({"success": true}))),
        CycleOutcome::Refused { code, error } => match code.as_str() {
            "lease" | "settled" => Ok(
                HttpResponse::Ok().json(json!({"success": false, "error": error, "code": code}))
            ),
            "unknown_query" => Err(ApiError::NotFound(error)),
            _ => Err(ApiError::BadRequest(error)),
        },
    }
}
