//! Configure under JWT roles: a read-write token creates queues with any options and may
//! keep or lengthen an existing queue's limits, but a change that lets its data go sooner
//! or be refused needs admin (README, "Authentication").

use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use super::HS256;
use crate::support::caller::Caller;
use crate::support::tokens::{claims, hs256, SECRET};
use crate::support::TestBroker;

fn configure(queue: &str, options: Value) -> Value {
    json!({ "queue": queue, "options": options })
}

/// A read-write token cannot shorten an existing queue's retention, ttl, dedup window or
/// maxSize (403 naming the option, nothing stored), while creating, lengthening and an
/// admin's shortening go through.
#[actix_rt::test]
async fn shortening_an_existing_queues_limits_needs_admin_and_creating_one_does_not() {
    // Arrange
    let b = TestBroker::start_with(&HS256).await;
    let writer = Caller::new(&b.base, &hs256(SECRET, &claims("writer", "read-write")));
    let admin = Caller::new(&b.base, &hs256(SECRET, &claims("root", "admin")));
    let path = "/api/v1/configure";
    let kept = json!({ "retentionSeconds": 3600, "ttl": 600, "dedupWindowSeconds": 300,
                       "maxSize": 1000, "retryLimit": 3 });
    let (status, created) = writer
        .send(Method::POST, path, Some(&configure("keep", kept.clone())))
        .await;
    assert_eq!(status, StatusCode::OK, "creating with options: {created}");

    // Act: each shortening as the writer, then the same options again and longer ones.
    let mut refused = Vec::new();
    for (option, value) in [
        ("retentionSeconds", json!(1)),
        ("ttl", json!(1)),
        ("dedupWindowSeconds", json!(0)),
        ("maxSize", json!(1)),
        ("deadLetterQueue", json!(false)),
    ] {
        let (status, body) = writer
            .send(
                Method::POST,
                path,
                Some(&configure("keep", json!({ option: value }))),
            )
            .await;
        refused.push((option, status, body));
    }
    let (same, _) = writer
        .send(Method::POST, path, Some(&configure("keep", kept.clone())))
        .await;
    let (longer, _) = writer
        .send(
            Method::POST,
            path,
            Some(&configure(
                "keep",
                json!({ "retentionSeconds": 7200, "maxSize": 0, "retryLimit": 1 }),
            )),
        )
        .await;
    let stored = b
        .sql()
        .await
        .query_one(
            "SELECT retention_seconds, ttl_seconds, dedup_window_seconds, max_size \
             FROM queen.queues WHERE name = 'keep'",
            &[],
        )
        .await
        .unwrap();
    let (by_admin, _) = admin
        .send(
            Method::POST,
            path,
            Some(&configure("keep", json!({ "retentionSeconds": 1 }))),
        )
        .await;

    // Assert
    for (option, status, body) in &refused {
        assert_eq!(*status, StatusCode::FORBIDDEN, "{option}: {body}");
        let text = body["error"].as_str().unwrap_or_default();
        assert!(text.contains(option) && text.contains("admin"), "{body}");
    }
    assert_eq!(same, StatusCode::OK, "the same options again");
    assert_eq!(longer, StatusCode::OK, "longer limits");
    let stored: (i32, i32, Option<i32>, i32) =
        (stored.get(0), stored.get(1), stored.get(2), stored.get(3));
    assert_eq!(
        stored,
        (7200, 600, Some(300), 0),
        "no refused change was stored"
    );
    assert_eq!(by_admin, StatusCode::OK, "an admin shortens retention");
    b.stop().await;
}
