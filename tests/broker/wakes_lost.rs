//! Lost wakes: a push through another node never wakes this node, and its parked consumer
//! still gets the message within the backoff floor (legacy path) or within the reseed
//! interval (hot-list path: the actor wakes a parked pop to run the reseed).

use std::time::{Duration, Instant};

use serde_json::json;

use crate::support::fixtures::{
    configure, count, counter, first_contact, metrics, spawn_get, wait_parked,
};
use crate::support::{eventually, payloads, TestBroker};

/// A lost wake still delivers within one backoff interval on the legacy path: a push through
/// another node never opens this node's gate, and the backoff re-poll finds it.
#[actix_rt::test]
async fn a_lost_wake_on_the_legacy_path_is_delivered_within_one_backoff_interval() {
    // Arrange: two nodes on one database, no mesh between them.
    let a = TestBroker::start_with(&[("QUEEN_HOTLIST", "0")]).await;
    let b = TestBroker::start_on(a.pg.clone(), &[("QUEEN_HOTLIST", "0")]).await;
    configure(&a, "lost-legacy", json!({})).await;
    first_contact(&a, "lost-legacy", "__QUEUE_MODE__").await;
    let polls_before = counter(&a, "/sql/hasPending").await;
    let pop = spawn_get(&a, "/api/v1/pop/queue/lost-legacy?wait=true&timeout=10000");
    wait_parked(&a, 1).await;
    // Five re-polls (100, 100, 100, 800 ms...) put the parked pop at its 1 s backoff cap.
    let capped = eventually(Duration::from_secs(5), || async {
        let polls = counter(&a, "/sql/hasPending").await - polls_before;
        (polls >= 5).then_some(polls)
    })
    .await;
    assert!(capped.is_some(), "the parked pop did not re-poll");
    let a_before = metrics(&a).await;

    // Act
    let sent = Instant::now();
    b.push("lost-legacy", "Default", &[json!("via-b")]).await;
    let answer = pop.await.expect("pop task");
    let took = answer.at.saturating_duration_since(sent);

    // Assert
    assert_eq!(payloads(&answer.messages()), vec![json!("via-b")]);
    eprintln!("legacy lost-wake delivery: {took:?}");
    assert!(
        took < Duration::from_millis(1200),
        "node A delivered a push made on node B only after {took:?} (backoff cap 1 s)"
    );
    let a_after = metrics(&a).await;
    for w in ["/wakes/push", "/wakes/peer"] {
        assert_eq!(
            count(&a_after, w),
            count(&a_before, w),
            "{w}: node A was woken, so the wake was not lost"
        );
    }
}

/// A lost wake still delivers on the hot-list path: the periodic reseed, run by the parked
/// pop the actor wakes when it falls due, finds a partition pushed through another node
/// within the reseed interval.
#[actix_rt::test]
async fn a_lost_wake_on_the_hotlist_path_is_delivered_within_reseed_plus_backoff() {
    // Arrange
    let vars = [("QUEEN_HOTLIST_RESEED_MS", "300")];
    let a = TestBroker::start_with(&vars).await;
    let b = TestBroker::start_on(a.pg.clone(), &vars).await;
    configure(&a, "lost-ring", json!({})).await;
    first_contact(&a, "lost-ring", "__QUEUE_MODE__").await;
    let polls_before = counter(&a, "/pops/emptyInMemory").await;
    let pop = spawn_get(&a, "/api/v1/pop/queue/lost-ring?wait=true&timeout=10000");
    wait_parked(&a, 1).await;
    // Five in-memory plans: the parked pop has been woken for several reseeds.
    let capped = eventually(Duration::from_secs(5), || async {
        let polls = counter(&a, "/pops/emptyInMemory").await - polls_before;
        (polls >= 5).then_some(polls)
    })
    .await;
    assert!(
        capped.is_some(),
        "the parked pop was never woken for a reseed"
    );
    let a_before = metrics(&a).await;

    // Act
    let sent = Instant::now();
    b.push("lost-ring", "Default", &[json!("via-b")]).await;
    let answer = pop.await.expect("pop task");
    let took = answer.at.saturating_duration_since(sent);

    // Assert: 300 ms reseed, with the margin the backoff of earlier brokers needed.
    assert_eq!(payloads(&answer.messages()), vec![json!("via-b")]);
    eprintln!("hot-list lost-wake delivery: {took:?}");
    assert!(
        took < Duration::from_millis(1500),
        "node A delivered a push made on node B only after {took:?} (reseed 300 ms, backoff 1 s)"
    );
    let a_after = metrics(&a).await;
    for w in ["/wakes/push", "/wakes/peer"] {
        assert_eq!(
            count(&a_after, w),
            count(&a_before, w),
            "{w}: node A was woken, so the wake was not lost"
        );
    }
    assert!(
        count(&a_after, "/sql/reseed") > count(&a_before, "/sql/reseed"),
        "found without a reseed? {a_after}"
    );
}
