//! The web console: one page application served at `/` and `/console/…` by every node.
//!
//! The page, its script and its style sheet are compiled into the binary (`include_bytes!`),
//! so there is no separate server and no build step at run time. The page only calls the
//! broker's own public API (the routes in the OpenAPI document) from the browser; this
//! module serves files and nothing else. It uses no front-end library: the live chart is
//! drawn as SVG by `app.js`.

use actix_web::http::header;
use actix_web::{web, HttpResponse};

use super::error::ApiError;

/// The compiled-in files: name under `/console/assets/`, content type, bytes.
const ASSETS: [(&str, &str, &[u8]); 7] = [
    (
        "core.js",
        "text/javascript; charset=utf-8",
        include_bytes!("assets/core.js"),
    ),
    (
        "views.js",
        "text/javascript; charset=utf-8",
        include_bytes!("assets/views.js"),
    ),
    (
        "ops.js",
        "text/javascript; charset=utf-8",
        include_bytes!("assets/ops.js"),
    ),
    (
        "kv.js",
        "text/javascript; charset=utf-8",
        include_bytes!("assets/kv.js"),
    ),
    (
        "timers.js",
        "text/javascript; charset=utf-8",
        include_bytes!("assets/timers.js"),
    ),
    (
        "ephemeral.js",
        "text/javascript; charset=utf-8",
        include_bytes!("assets/ephemeral.js"),
    ),
    (
        "style.css",
        "text/css; charset=utf-8",
        include_bytes!("assets/style.css"),
    ),
];

/// The page every console path answers (the script picks the view from the path).
const INDEX: &[u8] = include_bytes!("assets/index.html");

/// `GET /`: the console's overview.
#[utoipa::path(
    get,
    path = "/",
    tag = "console",
    responses(
        (status = 200, description = "the console page", content_type = "text/html", body = String)
    )
)]
pub async fn index() -> HttpResponse {
    html()
}

/// `GET /console/{view}`: the console opened on one view (`queues`, `groups`, `messages`,
/// `dlq`, `maintenance`, or a queue's page `queues/{queue}`).
#[utoipa::path(
    get,
    path = "/console/{view}",
    tag = "console",
    params(("view" = String, Path, description = "the view, possibly with a queue name")),
    responses(
        (status = 200, description = "the console page", content_type = "text/html", body = String)
    )
)]
pub async fn page() -> HttpResponse {
    html()
}

/// `GET /console/assets/{file}`: the console's script and style sheet; 404 otherwise.
#[utoipa::path(
    get,
    path = "/console/assets/{file}",
    tag = "console",
    params(("file" = String, Path, description = "`app.js` or `style.css`")),
    responses(
        (status = 200, description = "the file", body = String),
        (status = 404, description = "no such file", body = crate::http::openapi::schemas::ErrorBody)
    )
)]
pub async fn asset(file: web::Path<String>) -> Result<HttpResponse, ApiError> {
    let (_, content_type, bytes) = ASSETS
        .iter()
        .find(|(name, _, _)| *name == file.as_str())
        .ok_or_else(|| ApiError::NotFound("no such console file".into()))?;
    Ok(HttpResponse::Ok()
        .content_type(*content_type)
        .insert_header((header::CACHE_CONTROL, "no-cache"))
        .body(*bytes))
}

fn html() -> HttpResponse {
    HttpResponse::Ok()
        .content_type("text/html; charset=utf-8")
        .insert_header((header::CACHE_CONTROL, "no-cache"))
        .body(INDEX)
}
