//! HTTP: the route table, the shared state the handlers see, and the body and query readers.
//!
//! One handler file per route family (`push`, `pop`, `ack`, `transaction`, `lease`,
//! `configure`, `health`, and the admin families under [`admin`]); the binary bodies live in
//! [`binary`]; status codes and error bodies are decided in [`error`] only. The web console's
//! files are served by [`console`]; [`openapi`] describes every route and serves that;
//! [`timing`] times every request for the latency histograms; [`auth`] is the JWT gate in
//! front of every route when authentication is on.

pub mod ack;
pub mod admin;
pub mod auth;
pub mod binary;
pub mod configure;
pub mod console;
pub mod error;
pub mod health;
pub mod json_field;
pub mod json_out;
pub mod lease;
pub mod metrics;
pub mod openapi;
pub mod pop;
pub mod push;
pub mod query;
#[cfg(test)]
mod route_table;
pub mod slashes;
pub mod system;
pub mod timing;
pub mod transaction;

use std::sync::Arc;

use actix_web::http::header::{self, HeaderValue};
use actix_web::{web, HttpMessage, HttpRequest, HttpResponse, ResponseError};
use bytes::{Bytes, BytesMut};
use futures_util::StreamExt;

use crate::auth::Identity;
use crate::broker::Broker;
use crate::domain::Tenant;
pub use error::ApiError;

/// What every handler can reach.
#[derive(Clone)]
pub struct AppState {
    /// The broker's shared parts.
    pub broker: Arc<Broker>,
    /// The JWT gate, when `JWT_ENABLED` is on.
    pub gate: Option<Arc<auth::Gate>>,
}

impl AppState {
    /// The tenant a request acts for: the one the auth gate resolved from the token's
    /// tenant claim, else the default tenant (no authentication, or a token without the
    /// claim, or a skip path called without a token).
    pub fn tenant(&self, req: &HttpRequest) -> Tenant {
        req.extensions()
            .get::<Tenant>()
            .cloned()
            .unwrap_or_else(Tenant::default_tenant)
    }

    /// The producer to stamp on what this request pushes: the verified token's `sub` with
    /// authentication on, nobody without it (a body never names its producer).
    pub fn producer(&self, req: &HttpRequest) -> Option<Arc<str>> {
        req.extensions()
            .get::<Identity>()
            .and_then(|identity| identity.sub.clone())
    }
}

/// The route table.
pub fn routes(cfg: &mut web::ServiceConfig) {
    // The data path first: actix tries resources in registration order, and the admin
    // family's many templated paths cost a regex match each (seen in a profile of push).
    cfg.service(
        web::resource("/api/openapi.json")
            .route(web::get().to(openapi::serve))
            .default_service(web::to(method_not_allowed)),
    )
    .service(
        web::resource(["/health", "/health/ready"])
            .route(web::get().to(health::health))
            .default_service(web::to(method_not_allowed)),
    )
    .service(
        web::resource("/health/live")
            .route(web::get().to(health::live))
            .default_service(web::to(method_not_allowed)),
    )
    .service(
        web::resource("/api/v1/push")
            .app_data(timing::Route("/api/v1/push"))
            .route(web::post().to(push::push))
            .default_service(web::to(method_not_allowed)),
    )
    .service(
        web::resource("/api/v1/pop")
            .app_data(timing::Route("/api/v1/pop"))
            .route(web::get().to(pop::pop_discover))
            .default_service(web::to(method_not_allowed)),
    )
    .service(
        web::resource("/api/v1/pop/queue/{queue}")
            .app_data(timing::Route("/api/v1/pop/queue/{queue}"))
            .route(web::get().to(pop::pop_queue))
            .default_service(web::to(method_not_allowed)),
    )
    .service(
        web::resource("/api/v1/pop/queue/{queue}/partition/{partition}")
            .app_data(timing::Route(
                "/api/v1/pop/queue/{queue}/partition/{partition}",
            ))
            .route(web::get().to(pop::pop_partition))
            .default_service(web::to(method_not_allowed)),
    )
    .service(
        web::resource("/api/v1/ack")
            .app_data(timing::Route("/api/v1/ack"))
            .route(web::post().to(ack::ack_one))
            .default_service(web::to(method_not_allowed)),
    )
    .service(
        web::resource("/api/v1/ack/batch")
            .app_data(timing::Route("/api/v1/ack/batch"))
            .route(web::post().to(ack::ack_batch))
            .default_service(web::to(method_not_allowed)),
    )
    .service(
        web::resource("/api/v1/transaction")
            .route(web::post().to(transaction::transaction))
            .default_service(web::to(method_not_allowed)),
    )
    .service(
        web::resource("/api/v1/lease/{lease_id}/extend")
            .route(web::post().to(lease::extend))
            .default_service(web::to(method_not_allowed)),
    )
    .service(
        web::resource("/api/v1/configure")
            .route(web::post().to(configure::configure))
            .default_service(web::to(method_not_allowed)),
    )
    .service(
        web::resource("/metrics")
            .route(web::get().to(metrics::metrics))
            .default_service(web::to(method_not_allowed)),
    )
    .service(
        web::resource("/metrics/prometheus")
            .route(web::get().to(metrics::prometheus))
            .default_service(web::to(method_not_allowed)),
    )
    .service(
        web::resource("/api/v1/system/maintenance")
            .route(web::get().to(system::get_maintenance))
            .route(web::post().to(system::set_maintenance))
            .route(web::put().to(system::set_maintenance))
            .default_service(web::to(method_not_allowed)),
    );
    admin::routes(cfg);
    console::routes(cfg);
    cfg.default_service(web::to(no_route));
}

async fn no_route(req: HttpRequest) -> Result<HttpResponse, ApiError> {
    Err(ApiError::NoRoute {
        path: req.path().to_owned(),
    })
}

/// The 405 of a route that exists for other methods, with the `Allow` header HTTP asks for
/// (the methods the OpenAPI document lists for the route's pattern).
pub(crate) async fn method_not_allowed(req: HttpRequest) -> HttpResponse {
    let mut answer = ApiError::MethodNotAllowed.error_response();
    if let Some(pattern) = req.match_pattern() {
        let allow = openapi::allowed_methods(&pattern).join(", ");
        if let Ok(value) = HeaderValue::from_str(&allow) {
            answer.headers_mut().insert(header::ALLOW, value);
        }
    }
    answer
}

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
