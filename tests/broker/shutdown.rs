//! Stopping a broker: parked long-polls are answered at once (204) instead of holding the
//! stop until their deadlines, and readiness and liveness say what a balancer needs.

use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::json;

use crate::support::fixtures::{configure, first_contact, spawn_get, wait_parked};
use crate::support::TestBroker;

/// Long-polls parked with a 30 s deadline answer 204 within moments of a stop, and the stop
/// itself does not wait for their deadlines.
#[actix_rt::test]
async fn a_stopping_broker_answers_its_parked_long_polls_at_once() {
    // Arrange: five pops parked with 30 s deadlines and a 5 s backoff.
    let b = TestBroker::start_with(&[
        ("POP_WAIT_INITIAL_INTERVAL_MS", "5000"),
        ("POP_WAIT_MAX_INTERVAL_MS", "5000"),
    ])
    .await;
    configure(&b, "closing", json!({})).await;
    first_contact(&b, "closing", "__QUEUE_MODE__").await;
    let pops: Vec<_> = (0..5)
        .map(|_| spawn_get(&b, "/api/v1/pop/queue/closing?wait=true&timeout=30000"))
        .collect();
    wait_parked(&b, 5).await;

    // Act
    let stopping = Instant::now();
    b.stop().await;
    let stopped_after = stopping.elapsed();

    // Assert
    for pop in pops {
        let answer = pop.await.expect("pop task");
        assert_eq!(answer.status, StatusCode::NO_CONTENT, "{}", answer.body);
        let waited = answer.at.saturating_duration_since(stopping);
        assert!(
            waited < Duration::from_secs(3),
            "answered {waited:?} after the stop"
        );
    }
    assert!(
        stopped_after < Duration::from_secs(4),
        "the stop took {stopped_after:?}"
    );
}

/// Liveness answers without asking the database; readiness answers like `/health`.
#[actix_rt::test]
async fn liveness_and_readiness_answer_on_a_serving_broker() {
    // Arrange
    let b = TestBroker::start().await;

    // Act
    let (live, live_body) = b.get("/health/live").await;
    let (ready, ready_body) = b.get("/health/ready").await;
    let (wrong, _) = b.post("/health/live", &json!({})).await;

    // Assert
    assert_eq!(live, StatusCode::OK);
    assert_eq!(live_body["status"], "alive");
    assert_eq!(ready, StatusCode::OK);
    assert_eq!(ready_body["status"], "healthy");
    assert_eq!(wrong, StatusCode::METHOD_NOT_ALLOWED);
    b.stop().await;
}
