//! A parked pop is quiet: it waits for a wake or its deadline and does not re-ask its
//! group actor on a backoff of its own (a node holding a hundred thousand parked pops would
//! otherwise re-plan a hundred thousand times a second); the group's reseed, when it falls
//! due, wakes one of them.

use std::time::Duration;

use reqwest::StatusCode;
use serde_json::json;

use crate::support::fixtures::{configure, counter, first_contact, spawn_get};
use crate::support::TestBroker;

/// Parked for 3 s on an empty queue whose reseed is 5 s away, a pop asks its actor once
/// (the backoff of 100, 100, 100, 800, 1000 ms would have asked six or seven times) and
/// answers 204 at its deadline.
#[actix_rt::test]
async fn a_parked_pop_asks_its_actor_once_until_its_deadline() {
    // Arrange
    let b = TestBroker::start_with(&[("QUEEN_HOTLIST_RESEED_MS", "5000")]).await;
    configure(&b, "quiet", json!({})).await;
    first_contact(&b, "quiet", "__QUEUE_MODE__").await;
    let asked_before = counter(&b, "/pops/emptyInMemory").await;

    // Act
    let answer = spawn_get(&b, "/api/v1/pop/queue/quiet?wait=true&timeout=3000")
        .await
        .expect("pop task");

    // Assert
    assert_eq!(answer.status, StatusCode::NO_CONTENT);
    let waited = answer.at.saturating_duration_since(answer.sent);
    assert!(
        waited >= Duration::from_millis(2900),
        "answered after {waited:?}"
    );
    let asked = counter(&b, "/pops/emptyInMemory").await - asked_before;
    assert!(
        asked <= 2,
        "the parked pop asked its actor {asked} times in 3 s: it re-polls"
    );
}
