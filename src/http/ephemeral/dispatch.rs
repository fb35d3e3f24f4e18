//! Runs a checked call where the queue lives and turns the engine's answer into HTTP.

use actix_web::http::{header, StatusCode};
use actix_web::HttpResponse;

use crate::broker::Broker;
use crate::domain::ephemeral::{Answer, Call, EphemeralInputError};
use crate::ephemeral::serve::serve;

/// Runs `call` for `tenant` on the queue's owner node (this one, or a peer over the mesh).
pub async fn call(broker: &Broker, tenant: &str, call: Call) -> HttpResponse {
    respond(serve(broker, tenant, call).await)
}

/// The HTTP answer of an engine answer.
pub fn respond(answer: Answer) -> HttpResponse {
    let status = StatusCode::from_u16(answer.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut response = HttpResponse::build(status);
    if answer.retry_after {
        response.insert_header((header::RETRY_AFTER, "1"));
    }
    response.content_type("application/json").body(answer.body)
}

/// A 400 for refused input; nothing was changed.
pub fn refused(error: EphemeralInputError) -> HttpResponse {
    respond(Answer::error(
        400,
        "bad_request",
        error.reason,
        error.detail,
    ))
}
