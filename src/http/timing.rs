//! Request timing: an actix middleware that observes every answered request's handling time
//! in `queen_http_request_duration_seconds{route, method}` (the route's pattern, so the
//! label set stays small) and the push, pop and ack ones in their own histograms.
//!
//! It wraps the whole app, so no handler has to time itself.

use std::time::Instant;

use actix_web::body::MessageBody;
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::middleware::Next;
use actix_web::Error;

use crate::metrics::latency::latency;

/// The middleware function (`actix_web::middleware::from_fn(observe)`).
pub async fn observe(
    req: ServiceRequest,
    next: Next<impl MessageBody>,
) -> Result<ServiceResponse<impl MessageBody>, Error> {
    let started = Instant::now();
    let method = req.method().as_str().to_owned();
    let answer = next.call(req).await?;
    let elapsed = started.elapsed().as_secs_f64();
    let Some(route) = answer.request().match_pattern() else {
        return Ok(answer); // no route matched: a 404 not worth a label of its own
    };
    let metrics = latency();
    match family(&route) {
        Some(Family::Push) => metrics.push.observe(elapsed),
        Some(Family::Pop) => metrics.pop.observe(elapsed),
        Some(Family::Ack) => metrics.ack.observe(elapsed),
        None => {}
    }
    metrics
        .http
        .with_label_values(&[route.as_str(), method.as_str()])
        .observe(elapsed);
    Ok(answer)
}

/// The request families with histograms of their own.
#[derive(Debug, PartialEq, Eq)]
enum Family {
    Push,
    Pop,
    Ack,
}

fn family(route: &str) -> Option<Family> {
    match route {
        "/api/v1/push" => Some(Family::Push),
        "/api/v1/ack" | "/api/v1/ack/batch" => Some(Family::Ack),
        r if r == "/api/v1/pop" || r.starts_with("/api/v1/pop/") => Some(Family::Pop),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pop_routes_push_and_both_ack_routes_have_their_own_family() {
        assert_eq!(family("/api/v1/push"), Some(Family::Push));
        assert_eq!(family("/api/v1/pop"), Some(Family::Pop));
        assert_eq!(family("/api/v1/pop/queue/{queue}"), Some(Family::Pop));
        assert_eq!(family("/api/v1/ack/batch"), Some(Family::Ack));
        assert_eq!(family("/api/v1/population"), None);
        assert_eq!(family("/api/v1/dlq"), None);
    }
}
