//! The answers for a path no route serves (404) and for a method a route does not take
//! (405, with the `Allow` header), shared by every route table.

use actix_web::http::header::{self, HeaderValue};
use actix_web::{HttpRequest, HttpResponse, ResponseError};

use super::error::ApiError;
use super::openapi;

/// The 404 of a path no route serves.
pub(crate) async fn no_route(req: HttpRequest) -> Result<HttpResponse, ApiError> {
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
