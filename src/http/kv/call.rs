//! What `POST /api/v1/kv` and `POST /api/v1/locks` do alike around their engines: read the
//! body's `operations` array, take a permit of the broker's limit of database work and a
//! pooled connection for the one statement a call is, and answer the JSON text PostgreSQL
//! built as it is. Every failure is the `{error, reason, detail}` envelope ([`KvError`]).

use actix_web::{web, HttpResponse};
use serde_json::Value;

use super::error::KvError;
use crate::db::kv::KvApplyError;
use crate::db::Conn;
use crate::http::body::read_body;
use crate::http::state::AppState;
use crate::limiter::Permit;

/// The body's `operations` (any JSON; the route's parser checks it), or a 400 with
/// `missing` as the reason when the body is not `{"operations": ...}`.
pub async fn operations(
    state: &AppState,
    payload: web::Payload,
    missing: &'static str,
) -> Result<Value, KvError> {
    let body = read_body(payload, state.broker.config.http.max_body_bytes).await?;
    let mut call: Value = serde_json::from_slice(&body)
        .map_err(|e| KvError::bad_request("json", format!("invalid JSON body: {e}")))?;
    match call.get_mut("operations") {
        Some(operations) => Ok(operations.take()),
        None => Err(KvError::bad_request(
            missing,
            "the body must be {\"operations\": [op, ...]}",
        )),
    }
}

/// A permit (a storm of calls queues here, not inside PostgreSQL; see `crate::limiter`)
/// and a connection. None within the pool timeout: 429 `overloaded`.
pub async fn connection(state: &AppState) -> Result<(Permit, Conn<'_>), KvError> {
    let permit = state
        .broker
        .permit()
        .await
        .map_err(KvApplyError::NotApplied)?;
    let conn = state
        .broker
        .db
        .conn()
        .await
        .map_err(KvApplyError::NotApplied)?;
    Ok((permit, conn))
}

/// A 200 whose body is the JSON text PostgreSQL built.
pub fn answer(json: String) -> HttpResponse {
    HttpResponse::Ok()
        .content_type("application/json")
        .body(json)
}

/// The answer to a call of no operations: nothing to run.
pub fn nothing() -> HttpResponse {
    answer(r#"{"results":[]}"#.to_owned())
}
