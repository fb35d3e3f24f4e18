//! Roles over real HTTP: every route of the rules table, called with no token, with a
//! token one role short, and with the role it needs; and the claim names being settings.

use reqwest::{Method, StatusCode};
use serde_json::json;

use super::{get_as, HS256};
use crate::support::tokens::{claims, hs256, now, SECRET};
use crate::support::TestBroker;
use queen::auth::rules::RULES;
use queen::auth::{Access, Role};

/// Walks the whole rules table (the route-table test proves it covers every route): each
/// route refuses no token with 401 and a role one short with 403 (JSON both), and lets the
/// role it names through (whatever the handler then answers).
#[actix_rt::test]
async fn every_route_answers_401_without_a_token_403_one_role_short_and_serves_its_role() {
    // Arrange
    let b = TestBroker::start_with(&HS256).await;
    let token = |role: &str| hs256(SECRET, &claims("walker", role));
    let below = |role: Role| match role {
        Role::ReadOnly => None,
        Role::ReadWrite => Some(token("read-only")),
        Role::Admin => Some(token("read-write")),
    };
    let mut checked = 0;

    for (method, pattern, access) in RULES {
        let path: String = pattern
            .split('/')
            .map(|seg| if seg.starts_with('{') { "x" } else { seg })
            .collect::<Vec<_>>()
            .join("/");
        let path = if path.is_empty() {
            "/".to_owned()
        } else {
            path
        };
        let method = Method::from_bytes(method.as_bytes()).expect("a method");
        let send = |authorization: Option<String>| {
            let mut request = b.http.request(method.clone(), b.url(&path));
            if let Some(token) = authorization {
                request = request.header("authorization", format!("Bearer {token}"));
            }
            async move { crate::support::read(request.send().await.expect("request")).await }
        };
        let Access::Role(role) = access else {
            let (status, _) = send(None).await;
            assert!(
                status != StatusCode::UNAUTHORIZED && status != StatusCode::FORBIDDEN,
                "{method} {path} is public, answered {status}"
            );
            continue;
        };
        if [
            "/health",
            "/health/ready",
            "/health/live",
            "/metrics",
            "/metrics/prometheus",
        ]
        .contains(&path.as_str())
        {
            continue; // skip paths: open whatever their rule says (tested elsewhere)
        }

        // Act + Assert
        let (status, body) = send(None).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{method} {path}: {body}");
        assert!(body["error"].is_string(), "{method} {path}: {body}");
        if let Some(short) = below(*role) {
            let (status, body) = send(Some(short)).await;
            assert_eq!(status, StatusCode::FORBIDDEN, "{method} {path}: {body}");
            assert!(
                body["error"].as_str().unwrap_or("").contains(role.as_str()),
                "{body}"
            );
        }
        let (status, body) = send(Some(token(role.as_str()))).await;
        assert!(
            status != StatusCode::UNAUTHORIZED && status != StatusCode::FORBIDDEN,
            "{method} {path} with {role}: {status} {body}"
        );
        checked += 1;
    }
    assert!(checked > 40, "only {checked} routes walked");
    b.stop().await;
}

/// The roles nest (admin does what read-write does), a token without a known role is a
/// 403, the `roles` array counts like `role`, and the claim names are settings.
#[actix_rt::test]
async fn roles_nest_come_from_either_claim_and_the_claim_names_are_settings() {
    // Arrange
    let mut vars = HS256.to_vec();
    vars.push(("QUEEN_JWT_ROLES_CLAIM", "permissions"));
    let mut b = TestBroker::start_with(&vars).await;
    let exp = now() + 600;
    let push = json!({"items": [{"queue": "roles", "payload": 1}]});

    // Act + Assert: admin pushes (read-write's route).
    b.authorize(Some(&hs256(SECRET, &claims("root", "admin"))));
    let (status, body) = b.post("/api/v1/push", &push).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    // An unknown role grants nothing.
    b.authorize(Some(&hs256(SECRET, &claims("guest", "superuser"))));
    let (status, body) = b.get("/api/v1/status").await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    // The renamed array claim grants read-write; the default `roles` name no longer does.
    b.authorize(Some(&hs256(
        SECRET,
        &json!({"sub": "w", "exp": exp, "permissions": ["x", "read-write"]}),
    )));
    let (status, body) = b.post("/api/v1/push", &push).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    b.authorize(Some(&hs256(
        SECRET,
        &json!({"sub": "w", "exp": exp, "roles": ["admin"]}),
    )));
    let (status, _) = b.get("/api/v1/status").await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    // read-write cannot delete or flip maintenance; its 403 is JSON naming the role.
    b.authorize(Some(&hs256(SECRET, &claims("w", "read-write"))));
    let response = b
        .http
        .delete(b.url("/api/v1/resources/queues/roles"))
        .send()
        .await
        .unwrap();
    let (status, body) = crate::support::read(response).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert_eq!(body["error"], "this route needs the admin role", "{body}");
    let (status, _) = b
        .post("/api/v1/system/maintenance", &json!({"pop": true}))
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (status, _) = get_as(&b, "/api/v1/resources/queues/roles", None).await;
    assert_eq!(
        status,
        StatusCode::OK,
        "the client's default header is sent"
    );
    b.stop().await;
}

/// The README's table of roles lists every rule with the role it needs.
#[test]
fn the_readme_lists_every_route_with_the_role_it_needs() {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md"))
        .expect("the README");
    let missing: Vec<String> = RULES
        .iter()
        .map(|(method, pattern, access)| {
            let role = match access {
                Access::Public => "none (public)",
                Access::Role(role) => role.as_str(),
            };
            format!("| `{method} {pattern}` | {role} |")
        })
        .filter(|row| !readme.contains(row.as_str()))
        .collect();
    assert!(
        missing.is_empty(),
        "README rows missing:\n{}",
        missing.join("\n")
    );
}
