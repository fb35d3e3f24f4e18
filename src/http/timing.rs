//! Request timing: observes every answered request's handling time
//! in `queen_http_request_duration_seconds{route, method}` (the route's pattern, so the
//! label set stays small) and the push, pop and ack ones in their own histograms.
//!
//! `front::front` runs it around the whole app, so no handler has to time itself.

use std::borrow::Cow;
use std::time::Instant;

use actix_web::dev::ServiceResponse;
use actix_web::http::Method;

use crate::metrics::latency::latency;

/// A route's pattern, given to the data-path resources as their app data: asking actix for
/// the matched pattern walks the route table again and runs a regex per templated route on
/// the way (about 2 % of the broker's CPU in a profile of pop+ack).
#[derive(Debug, Clone, Copy)]
pub struct Route(pub &'static str);

/// Observes an answered request's handling time, from `started` (called by `front::front`
/// once the routes answered; a request the gate refused is not timed).
pub fn observe<B>(answer: &ServiceResponse<B>, started: Instant, method: &Method) {
    let elapsed = started.elapsed().as_secs_f64();
    let route = match answer.request().app_data::<Route>() {
        Some(Route(pattern)) => Cow::Borrowed(*pattern),
        None => match answer.request().match_pattern() {
            Some(pattern) => Cow::Owned(pattern),
            None => return, // no route matched: a 404 not worth a label of its own
        },
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
        .with_label_values(&[route.as_ref(), method.as_str()])
        .observe(elapsed);
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
    use crate::http::route_table::TABLES;

    #[test]
    fn every_route_label_is_its_own_resource_pattern() {
        let mut labelled = 0;
        for (file, source) in TABLES {
            for block in source.split("web::resource(").skip(1) {
                let Some((_, after)) = block.split_once(".app_data(timing::Route(") else {
                    continue;
                };
                // Both as written, without the line breaks and trailing comma rustfmt adds.
                let text = |s: &str| {
                    let s = s.split(')').next().unwrap_or_default().trim();
                    s.trim_end_matches(',').trim().to_owned()
                };
                let (head, label) = (text(block), text(after));
                assert_eq!(
                    head, label,
                    "{file}: a resource labelled with another pattern"
                );
                assert!(
                    !block.contains("web::resource([") && label.starts_with('"'),
                    "{file}: {head}"
                );
                labelled += 1;
            }
        }
        assert_eq!(
            labelled, 24,
            "push, the three pop routes, both ack routes, fetch, partitions/changed, kv, locks, \
             the three timers routes, the three streams routes and the eight ephemeral routes"
        );
    }

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
