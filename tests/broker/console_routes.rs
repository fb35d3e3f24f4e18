//! The console's files over plain HTTP: every node serves them from the binary.

use reqwest::StatusCode;

use crate::support::TestBroker;

/// `/`, `/console/…` and the assets are served with their content types; an unknown asset
/// is a JSON 404.
#[actix_rt::test]
async fn the_console_page_and_its_assets_are_served_from_the_binary() {
    let b = TestBroker::start().await;
    for path in ["/", "/console", "/console/queues/orders", "/console/dlq"] {
        let r = b.http.get(b.url(path)).send().await.expect("answer");
        assert_eq!(r.status(), StatusCode::OK, "{path}");
        let kind = r.headers()["content-type"]
            .to_str()
            .unwrap_or("")
            .to_owned();
        assert!(kind.starts_with("text/html"), "{path}: {kind}");
        assert!(r.text().await.unwrap_or_default().contains("Queen console"));
    }
    for (file, kind) in [("core.js", "text/javascript"), ("style.css", "text/css")] {
        let r = b
            .http
            .get(b.url(&format!("/console/assets/{file}")))
            .send()
            .await
            .expect("answer");
        assert_eq!(r.status(), StatusCode::OK, "{file}");
        assert!(r.headers()["content-type"]
            .to_str()
            .unwrap_or("")
            .starts_with(kind));
    }
    let (status, body) = b.get("/console/assets/secret.txt").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert!(body["error"].is_string(), "{body}");
    let (_, doc) = b.get("/api/openapi.json").await;
    assert!(
        doc["paths"]["/console/{view}"]["get"].is_object(),
        "the console is documented"
    );
}
