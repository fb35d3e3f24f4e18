//! A pop lets its request's headers go before it runs. A long-poll keeps its request for
//! as long as it is parked, and actix gives every request head a header map made for 16
//! headers (about 6.5 KB, the largest part of a parked pop after the connection's buffers;
//! README, "Parked long-polls"). By the time a pop runs, the app's middleware has read
//! what it needs from them (the token, into the request's extensions), and the pop reads
//! only its path, query and extensions, so the map is swapped for an empty one that owns
//! no memory. It is a step of the app's one middleware (`front::front`), not a middleware
//! of the pop resources: each middleware layer is a future of its own that a parked pop
//! would keep.

use actix_web::dev::ServiceRequest;
use actix_web::http::header::HeaderMap;

/// Swaps a pop's header map for an empty one (called by `front::front` after the
/// authentication step, on the paths [`is_pop_path`] names); other requests keep theirs.
pub fn shed(req: &mut ServiceRequest) {
    if is_pop_path(req.path()) {
        *req.headers_mut() = HeaderMap::new();
    }
}

/// Whether `path` (slashes merged) is one of the pop routes' paths: `/api/v1/pop` and the
/// paths under `/api/v1/pop/queue/` (a method they do not serve is answered 405 without
/// its headers).
pub fn is_pop_path(path: &str) -> bool {
    path == "/api/v1/pop" || path.starts_with("/api/v1/pop/queue/")
}

#[cfg(test)]
mod tests {
    use actix_web::body::MessageBody;
    use actix_web::middleware::{from_fn, Next};
    use actix_web::test::{call_and_read_body, init_service, TestRequest};
    use actix_web::{web, App, Error, HttpRequest, HttpResponse};

    use super::*;
    use crate::http::route_table::{registered, TABLES};

    async fn capacity(req: HttpRequest) -> HttpResponse {
        HttpResponse::Ok().body(format!(
            "{} {}",
            req.headers().len(),
            req.headers().capacity()
        ))
    }

    async fn shedding(
        mut req: ServiceRequest,
        next: Next<impl MessageBody>,
    ) -> Result<actix_web::dev::ServiceResponse<impl MessageBody>, Error> {
        shed(&mut req);
        next.call(req).await
    }

    /// A pop path runs its handler with a header map that owns no memory; another path
    /// keeps its headers.
    #[actix_web::test]
    async fn a_pop_runs_with_a_header_map_that_owns_no_memory() {
        let app = init_service(
            App::new()
                .wrap(from_fn(shedding))
                .route("/api/v1/pop/queue/{queue}", web::get().to(capacity))
                .route("/kept", web::get().to(capacity)),
        )
        .await;
        let ask = |path: &'static str| {
            TestRequest::get()
                .uri(path)
                .insert_header(("x-some", "header"))
                .to_request()
        };
        let kept = call_and_read_body(&app, ask("/kept")).await;
        let shed = call_and_read_body(&app, ask("/api/v1/pop/queue/q?wait=true")).await;
        let kept = String::from_utf8_lossy(&kept).into_owned();
        assert!(kept.starts_with("1 "), "{kept}");
        assert_eq!(String::from_utf8_lossy(&shed), "0 0");
    }

    /// The pop routes' paths, and only theirs among the registered routes, are pop paths.
    #[test]
    fn the_pop_paths_are_the_pop_routes_paths_and_no_others() {
        let mut pops = 0;
        for (file, source) in TABLES {
            for (_, pattern) in registered(source) {
                let path = pattern
                    .split('/')
                    .map(|seg| if seg.starts_with('{') { "x" } else { seg })
                    .collect::<Vec<_>>()
                    .join("/");
                let is_pop_route = pattern.starts_with("/api/v1/pop");
                assert_eq!(is_pop_path(&path), is_pop_route, "{pattern} ({file})");
                pops += usize::from(is_pop_route);
            }
        }
        assert_eq!(pops, 3, "the three pop routes");
        assert!(!is_pop_path("/api/v1/population"));
    }
}
