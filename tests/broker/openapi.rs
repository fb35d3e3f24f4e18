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
        "/api/v1/fetch",
        "/api/v1/partitions/changed",
        "/api/v1/kv",
        "/api/v1/locks",
        "/streams/v1/queries",
        "/streams/v1/state/get",
        "/streams/v1/cycle",
        "/api/v1/ephemeral/push",
        "/api/v1/ephemeral/pop",
        "/api/v1/ephemeral/queues/{queue}/depth",
        "/health/ready",
    ] {
        assert!(doc["paths"][path].is_object(), "{path} documented");
    }
    assert!(doc["components"]["schemas"]["PushBody"].is_object());
    assert!(doc["components"]["schemas"]["FetchBody"].is_object());
    assert!(doc["components"]["schemas"]["ChangedBody"].is_object());
    assert!(doc["components"]["schemas"]["KvBody"].is_object());
    assert!(doc["components"]["schemas"]["LocksBody"].is_object());
    assert!(doc["components"]["schemas"]["CycleBody"].is_object());
}

/// A method a route does not take answers 405 with the JSON error and an `Allow` header
/// listing the methods it does take.
#[actix_rt::test]
async fn a_wrong_method_answers_405_with_an_allow_header() {
    let b = TestBroker::start().await;
    let cases = [
        (reqwest::Method::DELETE, "/api/v1/push", "POST"),
        (
            reqwest::Method::PATCH,
            "/api/v1/system/maintenance",
            "GET, POST, PUT",
        ),
        (reqwest::Method::PUT, "/health/ready", "GET"),
        (reqwest::Method::POST, "/api/v1/messages/1/t", "GET, DELETE"),
        (reqwest::Method::DELETE, "/console/queues", "GET"),
    ];
    for (method, path, allow) in cases {
        let r = b
            .http
            .request(method.clone(), b.url(path))
            .send()
            .await
            .expect("answer");

        assert_eq!(
            r.status(),
            StatusCode::METHOD_NOT_ALLOWED,
            "{method} {path}"
        );
        let header = r
            .headers()
            .get("allow")
            .map(|v| v.to_str().unwrap_or("").to_owned());
        assert_eq!(header.as_deref(), Some(allow), "{method} {path}");
        let body: serde_json::Value = r.json().await.expect("a JSON error");
        assert_eq!(body["error"], "method not allowed");
    }
}
