//! `GET /api/openapi.json`: the OpenAPI 3.1 document of every public route.
//!
//! Each handler carries its own `#[utoipa::path]` annotation (method, path, parameters, body
//! and answers), so the description sits beside the code it describes; this module lists the
//! annotated handlers, fills in what a macro cannot (the `/health/ready` alias, unique
//! operation ids) and serves the result. A unit test reads the route tables' source and
//! fails when a registered route is missing here. Request bodies and query strings are
//! described in [`schemas`] and [`params`]; the handlers keep parsing them by hand.

pub mod kv_schemas;
pub mod locks_schemas;
pub mod params;
pub mod read_schemas;
pub mod schemas;
pub mod streams_schemas;
pub mod timers_schemas;

use std::sync::OnceLock;

use actix_web::HttpResponse;
use utoipa::openapi::path::Operation;
use utoipa::openapi::OpenApi as Document;
use utoipa::OpenApi;

use crate::http;

/// The annotated handlers, gathered by `utoipa`.
#[derive(OpenApi)]
#[openapi(
    info(
        title = "Queen",
        description = "A partitioned message broker whose only state is PostgreSQL."
    ),
    paths(
        http::health::health,
        http::health::live,
        http::push::push,
        http::pop::pop_discover,
        http::pop::pop_queue,
        http::pop::pop_partition,
        http::ack::ack_one,
        http::ack::ack_batch,
        http::transaction::transaction,
        http::lease::extend,
        http::configure::configure,
        http::reads::fetch::fetch,
        http::reads::changed::changed,
        http::kv::route::kv,
        http::locks::route::locks,
        http::timers::route::timers,
        http::timers::list::list,
        http::timers::key::peek,
        http::timers::key::cancel,
        http::streams::queries::queries,
        http::streams::state::state_get_route,
        http::streams::cycle::cycle,
        http::ephemeral::routes::configure,
        http::ephemeral::routes::reset,
        http::ephemeral::routes::delete,
        http::ephemeral::routes::push,
        http::ephemeral::routes::pop,
        http::ephemeral::routes::ack,
        http::ephemeral::routes::queues,
        http::ephemeral::routes::depth,
        http::metrics::metrics,
        http::metrics::prometheus,
        http::system::get_maintenance,
        http::system::set_maintenance,
        http::admin::groups::list,
        http::admin::groups::lagging,
        http::admin::groups::detail,
        http::admin::groups::delete,
        http::admin::groups::delete_for_queue,
        http::admin::groups::subscription,
        http::admin::groups::seek,
        http::admin::dlq::list,
        http::admin::dlq::retry,
        http::admin::messages::list,
        http::admin::messages::detail,
        http::admin::messages::delete,
        http::admin::resources::overview,
        http::admin::resources::queues,
        http::admin::resources::queue,
        http::admin::resources::delete_queue,
        http::admin::resources::depth,
        http::admin::resources::partitions,
        http::admin::resources::namespaces,
        http::admin::kv::namespaces,
        http::admin::kv::keys,
        http::admin::resources::tasks,
        http::admin::status::status,
        http::admin::status::queues,
        http::admin::status::queue,
        http::admin::status::analytics,
        http::admin::status::system_metrics,
        http::admin::status::worker_metrics,
        http::admin::status::refresh_stats,
        http::admin::traces::add,
        http::admin::traces::for_message,
        http::admin::traces::by_name,
        http::admin::traces::names,
        http::console::index,
        http::console::page,
        http::console::asset,
        serve,
    )
)]
struct ApiDoc;

/// `GET /api/openapi.json`.
#[utoipa::path(
    get,
    path = "/api/openapi.json",
    tag = "console",
    responses((status = 200, description = "this document", body = Object))
)]
pub async fn serve() -> HttpResponse {
    HttpResponse::Ok().json(document())
}

/// The document, built once.
pub fn document() -> &'static Document {
    static DOCUMENT: OnceLock<Document> = OnceLock::new();
    DOCUMENT.get_or_init(build)
}

fn build() -> Document {
    let mut doc = ApiDoc::openapi();
    doc.info.version = env!("CARGO_PKG_VERSION").to_owned();
    // Aliases served by the same handler (a macro gives one path per function).
    for (alias, of) in [("/health/ready", "/health"), ("/console", "/")] {
        if let Some(item) = doc.paths.paths.get(of).cloned() {
            doc.paths.paths.insert(alias.to_owned(), item);
        }
    }
    // Handler names repeat across files (`list`, `detail`): name each operation after its
    // method and path so every operation id is unique, as OpenAPI requires.
    for (path, item) in doc.paths.paths.iter_mut() {
        let slots: [(&str, &mut Option<Operation>); 4] = [
            ("get", &mut item.get),
            ("post", &mut item.post),
            ("put", &mut item.put),
            ("delete", &mut item.delete),
        ];
        for (method, op) in slots {
            if let Some(op) = op {
                op.operation_id = Some(operation_id(method, path));
            }
        }
    }
    doc
}

/// `get` + `/api/v1/pop/queue/{queue}` → `get_api_v1_pop_queue_queue`.
fn operation_id(method: &str, path: &str) -> String {
    let mut id = String::from(method);
    for part in path.split('/').filter(|p| !p.is_empty()) {
        id.push('_');
        for c in part.chars() {
            let c = if c.is_ascii_alphanumeric() { c } else { '_' };
            if c != '_' || !id.ends_with('_') {
                id.push(c);
            }
        }
    }
    id.trim_end_matches('_').to_owned()
}

/// Whether the document has `method` on `path` (path parameters compared by position).
pub fn documents(method: &str, path: &str) -> bool {
    let wanted = shape(path);
    document().paths.paths.iter().any(|(p, item)| {
        let op = match method {
            "get" => &item.get,
            "post" => &item.post,
            "put" => &item.put,
            "delete" => &item.delete,
            _ => return false,
        };
        shape(p) == wanted && op.is_some()
    })
}

/// The methods the document lists for a route pattern, in `GET, POST, PUT, DELETE` order
/// (the `Allow` header of a 405).
pub fn allowed_methods(pattern: &str) -> Vec<&'static str> {
    ["GET", "POST", "PUT", "DELETE"]
        .into_iter()
        .filter(|m| documents(&m.to_ascii_lowercase(), pattern))
        .collect()
}

/// A path with every `{name}` (or actix `{name:regex}`) replaced by `{}`.
fn shape(path: &str) -> String {
    let mut out = String::new();
    let mut depth = 0;
    for c in path.chars() {
        match c {
            '{' => {
                if depth == 0 {
                    out.push_str("{}");
                }
                depth += 1;
            }
            '}' => depth -= 1,
            _ if depth == 0 => out.push(c),
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests;
