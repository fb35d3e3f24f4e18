//! Doubled slashes in a path are merged before routing and before the auth gate judges
//! the path, as actix's `NormalizePath` (merge only) did.

use reqwest::StatusCode;
use serde_json::json;

use crate::auth::{get_as, HS256};
use crate::support::tokens::{claims, hs256, SECRET};
use crate::support::{payloads, TestBroker};

/// A push and a pop whose paths double some slashes reach their routes, the query intact.
#[actix_rt::test]
async fn doubled_slashes_reach_the_route_with_the_query_intact() {
    // Arrange
    let b = TestBroker::start().await;

    // Act
    let (pushed, body) = b
        .post(
            "//api/v1//push",
            &json!({"items": [{"queue": "slashes", "payload": 1}, {"queue": "slashes", "payload": 2}]}),
        )
        .await;
    let popped = b.pop_messages("/api//v1/pop/queue//slashes?batch=1").await;

    // Assert
    assert_eq!(pushed, StatusCode::CREATED, "{body}");
    assert_eq!(
        payloads(&popped),
        vec![json!(1)],
        "the batch=1 query was kept"
    );
}

/// The gate judges the merged path: doubling a slash neither opens a route to a caller
/// without a token nor lets a read-only token delete.
#[actix_rt::test]
async fn doubled_slashes_do_not_slip_past_the_auth_gate() {
    // Arrange
    let b = TestBroker::start_with(&HS256).await;
    let reader = format!("Bearer {}", hs256(SECRET, &claims("ro", "read-only")));

    // Act
    let (anonymous, _) = get_as(&b, "//api//v1/resources/queues", None).await;
    let (as_reader, _) = get_as(&b, "/api//v1/resources//queues", Some(&reader)).await;
    let deleted = b
        .http
        .delete(b.url("/api/v1//resources/queues/slashes"))
        .header("authorization", &reader)
        .send()
        .await
        .expect("request reaches the broker")
        .status();

    // Assert
    assert_eq!(anonymous, StatusCode::UNAUTHORIZED);
    assert_eq!(as_reader, StatusCode::OK);
    assert_eq!(deleted, StatusCode::FORBIDDEN);
}
