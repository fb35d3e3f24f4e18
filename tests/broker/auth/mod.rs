//! JWT authentication over real HTTP with real signed tokens: the gate (401 and the open
//! probes), the roles over the whole route table, the key sources (PEM, JWKS over HTTP and
//! from a file, `auto`), and the producer stamped on pushed messages.

mod configure_rights;
mod keys;
mod producer;
mod roles;

use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::support::tokens::{claims, hs256, now, SECRET};
use crate::support::TestBroker;

/// Settings of a broker checking HS256 tokens under [`SECRET`].
pub const HS256: [(&str, &str); 2] = [("JWT_ENABLED", "true"), ("JWT_SECRET", SECRET)];

/// A GET with an optional raw `Authorization` value; status and parsed body.
pub async fn get_as(
    b: &TestBroker,
    path: &str,
    authorization: Option<&str>,
) -> (StatusCode, Value) {
    let mut request = b.http.get(b.url(path));
    if let Some(value) = authorization {
        request = request.header("authorization", value);
    }
    crate::support::read(request.send().await.expect("request reaches the broker")).await
}

/// Without auth settings nothing changes: no token is asked for.
#[actix_rt::test]
async fn without_jwt_enabled_requests_need_no_token() {
    let b = TestBroker::start().await;
    let (status, _) = b.get("/api/v1/resources/queues").await;
    assert_eq!(status, StatusCode::OK);
    let (status, _) = get_as(&b, "/api/v1/status", Some("Bearer not-even-a-token")).await;
    assert_eq!(status, StatusCode::OK);
    b.stop().await;
}

/// A missing, malformed, forged, expired, not-yet-valid, unsigned or foreign token is a
/// 401 with a JSON error; a clock a little off (within the skew) is forgiven; the probes
/// and the console's files need no token.
#[actix_rt::test]
async fn requests_without_a_valid_token_are_401_json_and_the_probes_stay_open() {
    // Arrange
    let mut vars = HS256.to_vec();
    vars.extend([
        ("JWT_ISSUER", "https://idp.test"),
        ("JWT_AUDIENCE", "queen"),
    ]);
    let b = TestBroker::start_with(&vars).await;
    let good = |extra: Value| {
        let mut c = claims("alice", "read-only");
        c["iss"] = json!("https://idp.test");
        c["aud"] = json!(["other", "queen"]);
        for (k, v) in extra.as_object().expect("an object") {
            c[k] = v.clone();
        }
        c
    };
    let bearer = |token: String| format!("Bearer {token}");
    let unsigned = format!(
        "eyJhbGciOiJub25lIiwidHlwIjoiSldUIn0.{}.",
        base64::Engine::encode(
            &base64::engine::general_purpose::URL_SAFE_NO_PAD,
            good(json!({})).to_string()
        )
    );
    let refused = [
        ("no header", None),
        ("empty bearer", Some("Bearer ".to_owned())),
        ("junk", Some(bearer("junk".into()))),
        (
            "other scheme",
            Some(format!("Basic {}", hs256(SECRET, &good(json!({}))))),
        ),
        (
            "wrong secret",
            Some(bearer(hs256("another-secret", &good(json!({}))))),
        ),
        (
            "expired",
            Some(bearer(hs256(SECRET, &good(json!({"exp": now() - 120}))))),
        ),
        (
            "not yet valid",
            Some(bearer(hs256(SECRET, &good(json!({"nbf": now() + 120}))))),
        ),
        (
            "no expiry",
            Some(bearer(hs256(
                SECRET,
                &json!({"sub": "a", "role": "admin", "iss": "https://idp.test", "aud": "queen"}),
            ))),
        ),
        (
            "wrong issuer",
            Some(bearer(hs256(
                SECRET,
                &good(json!({"iss": "https://evil.test"})),
            ))),
        ),
        (
            "wrong audience",
            Some(bearer(hs256(SECRET, &good(json!({"aud": "someone-else"}))))),
        ),
        ("alg none", Some(bearer(unsigned))),
    ];

    // Act + Assert
    for (what, header) in refused {
        let (status, body) = get_as(&b, "/api/v1/resources/queues", header.as_deref()).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{what}: {body}");
        assert!(
            body["error"].as_str().is_some_and(|e| !e.is_empty()),
            "{what}: {body}"
        );
    }
    let skewed = bearer(hs256(SECRET, &good(json!({"exp": now() - 10}))));
    let (status, body) = get_as(&b, "/api/v1/resources/queues", Some(&skewed)).await;
    assert_eq!(status, StatusCode::OK, "within the clock skew: {body}");
    let bare = hs256(SECRET, &good(json!({})));
    let (status, _) = get_as(&b, "/api/v1/resources/queues", Some(&bare)).await;
    assert_eq!(
        status,
        StatusCode::OK,
        "a bare token, as the old server took"
    );
    for open in [
        "/health",
        "/health/ready",
        "/health/live",
        "/metrics",
        "/metrics/prometheus",
        "/",
        "/console/queues",
    ] {
        let (status, body) = get_as(&b, open, None).await;
        assert_eq!(status, StatusCode::OK, "{open}: {body}");
    }
    let (status, _) = get_as(&b, "/no/such/route", None).await;
    assert_eq!(
        status,
        StatusCode::UNAUTHORIZED,
        "unknown paths are closed too"
    );
    b.stop().await;
}

/// `JWT_SKIP_PATHS` replaces the default list: a prefix entry opens a family of paths and
/// the probes it leaves out need a token.
#[actix_rt::test]
async fn skip_paths_are_configurable_with_prefixes() {
    let mut vars = HS256.to_vec();
    vars.push(("JWT_SKIP_PATHS", "/health/live,/api/v1/status*"));
    let b = TestBroker::start_with(&vars).await;
    for (path, expected) in [
        ("/health/live", StatusCode::OK),
        ("/api/v1/status/queues", StatusCode::OK),
        ("/health", StatusCode::UNAUTHORIZED),
        ("/metrics", StatusCode::UNAUTHORIZED),
    ] {
        let (status, body) = get_as(&b, path, None).await;
        assert_eq!(status, expected, "{path}: {body}");
    }
    b.stop().await;
}
