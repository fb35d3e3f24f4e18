//! The drift test: every route the route tables register is in the document.

use super::*;
use crate::http::route_table::{registered, TABLES};

#[test]
fn every_route_in_the_route_tables_is_in_the_openapi_document() {
    let mut missing = Vec::new();
    let mut seen = 0;
    for (file, source) in TABLES {
        for (method, path) in registered(source) {
            seen += 1;
            if !documents(&method, &path) {
                missing.push(format!("{} {path} ({file})", method.to_uppercase()));
            }
        }
    }
    assert!(seen > 50, "the route tables were not read: {seen} routes");
    assert!(
        missing.is_empty(),
        "routes missing from the OpenAPI document (annotate the handler with \
         #[utoipa::path] and list it in src/http/openapi/mod.rs):\n{}",
        missing.join("\n")
    );
}

#[test]
fn the_route_reader_sees_methods_and_alias_paths() {
    let source = r#"web::resource(["/a", "/b/{x}"]).route(web::get().to(h))
        .service(web::resource("/c").route(web::post().to(p)).route(web::put().to(p)))"#;
    let routes = registered(source);
    assert!(routes.contains(&("get".into(), "/b/{x}".into())));
    assert!(routes.contains(&("get".into(), "/a".into())));
    assert!(routes.contains(&("put".into(), "/c".into())));
    assert!(!routes.contains(&("get".into(), "/c".into())));
}

#[test]
fn the_document_is_openapi_3_1_with_unique_operation_ids() {
    let json = serde_json::to_value(document()).expect("the document serialises");
    assert!(json["openapi"].as_str().unwrap_or("").starts_with("3.1"));
    let mut ids = std::collections::HashSet::new();
    for item in json["paths"].as_object().expect("paths").values() {
        for op in item.as_object().expect("path item").values() {
            if let Some(id) = op.get("operationId").and_then(|v| v.as_str()) {
                assert!(ids.insert(id.to_owned()), "operation id {id} repeats");
            }
        }
    }
    assert!(documents("get", "/health/ready"));
    assert!(documents("get", "/api/v1/pop/queue/{q}/partition/{p}"));
    assert!(!documents("delete", "/api/v1/push"));
}

#[test]
fn operation_ids_are_built_from_method_and_path() {
    assert_eq!(
        operation_id("get", "/api/v1/pop/queue/{queue}"),
        "get_api_v1_pop_queue_queue"
    );
    assert_eq!(operation_id("get", "/"), "get");
}
