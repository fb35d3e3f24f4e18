//! A pop lets its request's headers go before it runs. A long-poll keeps its request for
//! as long as it is parked, and actix gives every request head a header map made for 16
//! headers (about 6.5 KB, the largest part of a parked pop after the connection's buffers;
//! README, "Parked long-polls"). By the time a pop runs, the app's middleware has read
//! what it needs from them (the token, into the request's extensions), and the pop reads
//! only its path, query and extensions, so the map is swapped for an empty one that owns
//! no memory.

use actix_web::body::MessageBody;
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::header::HeaderMap;
use actix_web::middleware::Next;
use actix_web::Error;

/// The middleware function of the pop resources (`actix_web::middleware::from_fn(shed)`).
pub async fn shed(
    mut req: ServiceRequest,
    next: Next<impl MessageBody>,
) -> Result<ServiceResponse<impl MessageBody>, Error> {
    *req.headers_mut() = HeaderMap::new();
    next.call(req).await
}

#[cfg(test)]
mod tests {
    use actix_web::middleware::from_fn;
    use actix_web::{test, web, App, HttpRequest, HttpResponse};

    use super::*;

    async fn capacity(req: HttpRequest) -> HttpResponse {
        HttpResponse::Ok().body(format!(
            "{} {}",
            req.headers().len(),
            req.headers().capacity()
        ))
    }

    #[actix_web::test]
    async fn a_pop_runs_with_a_header_map_that_owns_no_memory() {
        let app = test::init_service(
            App::new()
                .service(
                    web::resource("/shed")
                        .wrap(from_fn(shed))
                        .route(web::get().to(capacity)),
                )
                .service(web::resource("/kept").route(web::get().to(capacity))),
        )
        .await;
        let ask = |path: &'static str| {
            test::TestRequest::get()
                .uri(path)
                .insert_header(("x-some", "header"))
                .to_request()
        };
        let kept = test::call_and_read_body(&app, ask("/kept")).await;
        let shed = test::call_and_read_body(&app, ask("/shed")).await;
        let kept = String::from_utf8_lossy(&kept).into_owned();
        assert!(kept.starts_with("1 "), "{kept}");
        assert_eq!(String::from_utf8_lossy(&shed), "0 0");
    }
}
