//! The key sources: an RSA public key in PEM (text or file), a JWKS served over real HTTP
//! (rotated while the broker runs), a JWKS file, and `auto` with an HMAC secret and a
//! public key side by side.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use actix_web::{web, App, HttpResponse, HttpServer};
use reqwest::StatusCode;
use serde_json::{json, Value};

use super::get_as;
use crate::support::tokens::{claims, hs256, KeyPair, SECRET};
use crate::support::{eventually, TestBroker};

const PATH: &str = "/api/v1/resources/queues";

async fn status_with(b: &TestBroker, token: &str) -> StatusCode {
    get_as(b, PATH, Some(&format!("Bearer {token}"))).await.0
}

/// RS256 with `JWT_PUBLIC_KEY` as PEM text or as a file: the key's tokens pass, another
/// key's and an HS256 token do not.
#[actix_rt::test]
async fn rs256_tokens_verify_against_a_pem_public_key_given_as_text_or_file() {
    let key = KeyPair::rsa();
    let other = KeyPair::rsa();
    let path = key.public_path.display().to_string();
    for public in [key.public_pem.as_str(), path.as_str()] {
        let b = TestBroker::start_with(&[
            ("JWT_ENABLED", "true"),
            ("JWT_ALGORITHM", "RS256"),
            ("JWT_PUBLIC_KEY", public),
        ])
        .await;
        let c = claims("rsa-user", "read-only");
        assert_eq!(status_with(&b, &key.sign(&c, None)).await, StatusCode::OK);
        assert_eq!(
            status_with(&b, &other.sign(&c, None)).await,
            StatusCode::UNAUTHORIZED
        );
        assert_eq!(
            status_with(&b, &hs256(SECRET, &c)).await,
            StatusCode::UNAUTHORIZED
        );
        b.stop().await;
    }
}

/// `auto` takes HS256 with the secret and ES256 with the public key, and never checks an
/// HS256 token with the public key's bytes as the secret (the algorithm confusion attack).
#[actix_rt::test]
async fn auto_accepts_each_algorithm_with_its_own_key_only() {
    let ec = KeyPair::ec();
    let b = TestBroker::start_with(&[
        ("JWT_ENABLED", "true"),
        ("JWT_ALGORITHM", "auto"),
        ("JWT_SECRET", SECRET),
        ("JWT_PUBLIC_KEY", ec.public_pem.as_str()),
    ])
    .await;
    let c = claims("auto-user", "read-only");
    assert_eq!(status_with(&b, &hs256(SECRET, &c)).await, StatusCode::OK);
    assert_eq!(status_with(&b, &ec.sign(&c, None)).await, StatusCode::OK);
    let confused = hs256(&ec.public_pem, &c);
    assert_eq!(status_with(&b, &confused).await, StatusCode::UNAUTHORIZED);
    assert_eq!(
        status_with(&b, &KeyPair::ec().sign(&c, None)).await,
        StatusCode::UNAUTHORIZED
    );
    b.stop().await;
}

/// A JWKS served over HTTP: a token of a listed `kid` passes, one of an unknown `kid`
/// fails until the provider publishes it, and then passes without a restart (the set is
/// fetched again on the unknown `kid`). Unknown `kid`s cost at most one fetch a second.
#[actix_rt::test]
async fn a_jwks_url_is_fetched_cached_and_fetched_again_for_an_unknown_kid() {
    // Arrange: an identity provider on loopback publishing one key.
    let first = KeyPair::ec();
    let second = KeyPair::ec();
    let document = Arc::new(Mutex::new(json!({"keys": [first.jwk_with_kid("k1")]})));
    let fetches = Arc::new(AtomicUsize::new(0));
    let (url, server) = serve_jwks(document.clone(), fetches.clone());
    let b = TestBroker::start_with(&[
        ("JWT_ENABLED", "true"),
        ("JWT_ALGORITHM", "ES256"),
        ("JWT_JWKS_URL", url.as_str()),
    ])
    .await;
    let c = claims("jwks-user", "read-only");

    // Act + Assert
    assert_eq!(
        status_with(&b, &first.sign(&c, Some("k1"))).await,
        StatusCode::OK
    );
    let rotated = second.sign(&c, Some("k2"));
    for _ in 0..20 {
        assert_eq!(status_with(&b, &rotated).await, StatusCode::UNAUTHORIZED);
    }
    assert!(
        fetches.load(Ordering::SeqCst) <= 4,
        "unknown kids fetched the set {} times",
        fetches.load(Ordering::SeqCst)
    );
    document.lock().unwrap()["keys"]
        .as_array_mut()
        .unwrap()
        .push(second.jwk_with_kid("k2"));
    let accepted = eventually(Duration::from_secs(10), || async {
        (status_with(&b, &rotated).await == StatusCode::OK).then_some(())
    })
    .await;
    assert!(accepted.is_some(), "the rotated key was never fetched");
    assert_eq!(
        status_with(&b, &first.sign(&c, Some("k1"))).await,
        StatusCode::OK
    );
    b.stop().await;
    server.stop(true).await;
}

/// A JWKS file stands in for a provider: its RSA key verifies, and a token naming a
/// `kid` the file lacks does not.
#[actix_rt::test]
async fn a_jwks_file_path_is_accepted_for_clusters_without_a_provider() {
    let key = KeyPair::rsa();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("jwks.json");
    std::fs::write(
        &file,
        json!({"keys": [key.jwk_with_kid("file-key")]}).to_string(),
    )
    .unwrap();
    let b = TestBroker::start_with(&[
        ("JWT_ENABLED", "true"),
        ("JWT_ALGORITHM", "RS256"),
        ("JWT_JWKS_URL", file.to_str().unwrap()),
    ])
    .await;
    let c = claims("file-user", "read-only");
    assert_eq!(
        status_with(&b, &key.sign(&c, Some("file-key"))).await,
        StatusCode::OK
    );
    assert_eq!(status_with(&b, &key.sign(&c, None)).await, StatusCode::OK);
    assert_eq!(
        status_with(&b, &KeyPair::rsa().sign(&c, Some("file-key"))).await,
        StatusCode::UNAUTHORIZED
    );
    b.stop().await;
}

/// A loopback HTTP server answering `GET /jwks.json` with the current document.
fn serve_jwks(
    document: Arc<Mutex<Value>>,
    fetches: Arc<AtomicUsize>,
) -> (String, actix_web::dev::ServerHandle) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/jwks.json", listener.local_addr().unwrap());
    let server = HttpServer::new(move || {
        let document = document.clone();
        let fetches = fetches.clone();
        App::new().route(
            "/jwks.json",
            web::get().to(move || {
                let body = document.lock().unwrap().clone();
                fetches.fetch_add(1, Ordering::SeqCst);
                async move { HttpResponse::Ok().json(body) }
            }),
        )
    })
    .workers(1)
    .disable_signals()
    .listen(listener)
    .unwrap()
    .run();
    let handle = server.handle();
    actix_rt::spawn(server);
    (url, handle)
}
