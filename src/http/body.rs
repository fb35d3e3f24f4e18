//! The body readers: a request body up to the configured limit, and a JSON body parsed
//! with a 400 that says what is wrong.

use actix_web::web;
use bytes::{Bytes, BytesMut};
use futures_util::StreamExt;

use super::error::ApiError;

/// Reads a request body up to the configured limit (413 with a JSON error beyond it).
pub async fn read_body(mut payload: web::Payload, limit: usize) -> Result<Bytes, ApiError> {
    let mut body = BytesMut::new();
    while let Some(chunk) = payload.next().await {
        let chunk = chunk.map_err(|e| ApiError::bad_request(format!("request body: {e}")))?;
        if body.len() + chunk.len() > limit {
            return Err(ApiError::TooLarge { limit });
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body.freeze())
}

/// Parses a JSON body, answering 400 with serde's description of what is wrong.
pub fn parse_json<'a, T: serde::Deserialize<'a>>(body: &'a [u8]) -> Result<T, ApiError> {
    if body.is_empty() {
        return Err(ApiError::bad_request("request body must be a JSON object"));
    }
    serde_json::from_slice(body)
        .map_err(|e| ApiError::bad_request(format!("invalid JSON body: {e}")))
}
