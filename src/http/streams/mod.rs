//! `/streams/v1/...`, the server side of the 2.6 client's streams runtime
//! (`queen.streams`): [`queries`] registers a query, [`state`] reads its state, [`cycle`]
//! commits a cycle. The checks are `domain::streams`'s; README "Streams" lists the choices
//! the contract left open.

pub mod cycle;
pub mod queries;
pub mod state;

use actix_web::web;
use serde_json::Value;

use super::body::read_body;
use super::error::ApiError;
use super::state::AppState;
use crate::domain::streams::StreamsInputError;

/// The body as JSON, or a 400 saying why not.
async fn body(state: &AppState, payload: web::Payload) -> Result<Value, ApiError> {
    let bytes = read_body(payload, state.broker.config.http.max_body_bytes).await?;
    serde_json::from_slice(&bytes)
        .map_err(|e| ApiError::bad_request(format!("invalid JSON body: {e}")))
}

impl From<StreamsInputError> for ApiError {
    fn from(e: StreamsInputError) -> Self {
        ApiError::BadRequest(e.0)
    }
}
