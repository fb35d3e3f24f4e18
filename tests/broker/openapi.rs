//! `/api/openapi.json` over plain HTTP.

use reqwest::StatusCode;

use crate::support::TestBroker;

/// `/api/openapi.json` is an OpenAPI 3.1 document naming the broker's routes.
#[actix_rt::test]
async fn the_openapi_document_is_served_as_openapi_3_1() {
    let b = TestBroker::start().await;

    let (status, doc) = b.get("/api/openapi.json").await;

    assert_eq!(status, StatusCode::OK);
    assert!(
        doc["openapi"].as_str().unwrap_or("").starts_with("3.1"),
        "{}",
        doc["openapi"]
    );
    for path in [
        "/api/v1/push",
        "/api/v1/pop/queue/{queue}",
        "/api/v1/dlq",
        "/health/ready",
    ] {
        assert!(doc["paths"][path].is_object(), "{path} documented");
    }
    assert!(doc["components"]["schemas"]["PushBody"].is_object());
}
