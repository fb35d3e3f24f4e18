//! HTTP/2 over cleartext with prior knowledge (h2c) is served by default beside HTTP/1.1 on
//! the one HTTP port, and `QUEEN_HTTP2=false` turns it off.

use reqwest::{StatusCode, Version};

use crate::support::TestBroker;

/// A client that speaks only HTTP/2, with prior knowledge.
fn h2c_client() -> reqwest::Client {
    reqwest::Client::builder()
        .http2_prior_knowledge()
        .build()
        .expect("an HTTP/2 client")
}

#[actix_rt::test]
async fn a_broker_serves_h2c_and_http1_on_one_port_by_default() {
    // Arrange: a broker with default settings.
    let b = TestBroker::start().await;

    // Act: the same request over HTTP/2 and over HTTP/1.1.
    let h2 = h2c_client()
        .get(b.url("/health"))
        .send()
        .await
        .expect("an h2c request is served");
    let h1 = b
        .http
        .get(b.url("/health"))
        .send()
        .await
        .expect("an HTTP/1.1 request is served");

    // Assert
    assert_eq!(
        (h2.version(), h2.status()),
        (Version::HTTP_2, StatusCode::OK)
    );
    assert_eq!(
        (h1.version(), h1.status()),
        (Version::HTTP_11, StatusCode::OK)
    );
}

#[actix_rt::test]
async fn queen_http2_false_serves_http1_only() {
    // Arrange
    let b = TestBroker::start_with(&[("QUEEN_HTTP2", "false")]).await;

    // Act
    let h2 = h2c_client().get(b.url("/health")).send().await;
    let (h1, _) = b.get("/health").await;

    // Assert: the HTTP/2 preface is not understood; HTTP/1.1 is served.
    assert!(h2.is_err(), "h2c was served: {h2:?}");
    assert_eq!(h1, StatusCode::OK);
}
