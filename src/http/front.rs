//! The app's one middleware, in front of every route: it merges doubled slashes
//! ([`slashes`](super::slashes)), has the authentication step judge the request
//! ([`auth`](super::auth)), lets a pop's headers go ([`headers`](super::pop::headers)),
//! and times what the routes answer ([`timing`](super::timing)). What each step does is
//! decided in its own file; this one only runs them in that order.
//!
//! One middleware, not one per step: actix keeps a future for every middleware layer (and
//! a heap block for each inner one) for as long as a request runs, and a parked long-poll
//! runs for minutes (README, "Parked long-polls").

use std::time::Instant;

use actix_web::body::{EitherBody, MessageBody};
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::middleware::Next;
use actix_web::{Error, ResponseError};

use super::pop::headers;
use super::{auth, slashes, timing};

/// The middleware function (`actix_web::middleware::from_fn(front)`).
pub async fn front(
    mut req: ServiceRequest,
    next: Next<impl MessageBody>,
) -> Result<ServiceResponse<EitherBody<impl MessageBody>>, Error> {
    // Slashes first: the gate judges, and timing labels, the merged path.
    slashes::merge(&mut req);
    if let Err(refusal) = auth::admit(&req).await {
        return Ok(req.into_response(refusal.error_response().map_into_right_body()));
    }
    // After the gate, which reads the token from the headers.
    headers::shed(&mut req);
    let started = Instant::now();
    let method = req.method().clone();
    let answer = next.call(req).await?;
    timing::observe(&answer, started, &method);
    Ok(answer.map_into_left_body())
}
