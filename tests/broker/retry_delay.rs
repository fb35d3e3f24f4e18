//! `retryDelay`: a nacked message (and the rest of its partition) is not delivered again
//! before the delay has passed, and is delivered once it has: the group actor revisits
//! the partition then, without waiting for a reseed.

use std::time::{Duration, Instant};

use serde_json::json;

use crate::support::fixtures::{configure, counter, entry, numbers, offsets};
use crate::support::{eventually, payloads, TestBroker};

/// The delay of the queue under test.
const DELAY: Duration = Duration::from_millis(1_500);

/// A nacked message is held back for retryDelay: pops before it find nothing (while
/// another partition of the queue still serves), and a pop after it gets the message again.
#[actix_rt::test]
async fn a_nacked_message_is_not_redelivered_before_the_retry_delay_and_is_after_it() {
    // Arrange: reseeds far apart, so only the actor's wheel can bring the partition back.
    let b = TestBroker::start_with(&[("QUEEN_HOTLIST_RESEED_MS", "60000")]).await;
    configure(
        &b,
        "delayed-retry",
        json!({ "retryDelay": DELAY.as_millis() as i64 }),
    )
    .await;
    b.push("delayed-retry", "p", &numbers(0..3)).await;
    let first = b
        .pop_messages("/api/v1/pop/queue/delayed-retry?batch=10")
        .await;
    assert_eq!(payloads(&first), numbers(0..3));

    let done = b.ack_all(&first[..1], "completed", None).await;
    assert_eq!(done[0]["success"], true, "{done:?}");

    // Act: the clock starts before the nack is sent, so the hold (from the nack's own
    // time in PostgreSQL) cannot end before the delay measured here.
    let nacked_at = Instant::now();
    let (_, nack) = b
        .post(
            "/api/v1/ack",
            &entry(&first[1], "failed", Some("later please")),
        )
        .await;
    b.push("delayed-retry", "other", &[json!("other")]).await;
    let mut early = Vec::new();
    while nacked_at.elapsed() < DELAY - Duration::from_millis(300) {
        early.extend(
            b.pop_messages("/api/v1/pop/queue/delayed-retry?batch=10")
                .await,
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let again = eventually(Duration::from_secs(5), || async {
        let m = b
            .pop_messages("/api/v1/pop/queue/delayed-retry?batch=10")
            .await;
        (!m.is_empty()).then_some(m)
    })
    .await
    .expect("redelivered after the delay");
    let redelivered_after = nacked_at.elapsed();

    // Assert
    assert_eq!(nack[0]["success"], true, "{nack}");
    assert_eq!(
        payloads(&early),
        vec![json!("other")],
        "only the other partition is served during the delay"
    );
    assert_eq!(payloads(&again), numbers(1..3));
    assert_eq!(offsets(&again), vec![1, 2]);
    assert!(
        redelivered_after >= DELAY,
        "redelivered after {redelivered_after:?}"
    );
}

/// A consumer parked on a long-poll during the delay is answered when the delay ends.
#[actix_rt::test]
async fn a_parked_pop_is_answered_when_the_retry_delay_ends() {
    // Arrange
    let b = TestBroker::start_with(&[("QUEEN_HOTLIST_RESEED_MS", "60000")]).await;
    configure(
        &b,
        "parked-retry",
        json!({ "retryDelay": DELAY.as_millis() as i64 }),
    )
    .await;
    b.push("parked-retry", "Default", &numbers(0..2)).await;
    let first = b.pop_messages("/api/v1/pop/queue/parked-retry").await;
    let nacked_at = Instant::now();
    b.post("/api/v1/ack", &entry(&first[0], "failed", None))
        .await;

    // Act
    let got = b
        .pop_messages("/api/v1/pop/queue/parked-retry?wait=true&timeout=6000")
        .await;
    let answered_after = nacked_at.elapsed();

    // Assert
    assert_eq!(payloads(&got), numbers(0..2));
    assert!(answered_after >= DELAY, "answered after {answered_after:?}");
    assert!(
        answered_after < DELAY + Duration::from_millis(1_500),
        "the wheel, not a timeout or a reseed, brought it back: {answered_after:?}"
    );
    assert_eq!(got[0]["deliveryAttempt"], 2);
}

/// A queue that sets no retryDelay redelivers a nacked message at once, as before.
#[actix_rt::test]
async fn without_a_retry_delay_a_nacked_message_comes_back_at_once() {
    // Arrange
    let b = TestBroker::start().await;
    b.push("no-delay", "Default", &numbers(0..2)).await;
    let first = b.pop_messages("/api/v1/pop/queue/no-delay").await;
    b.post("/api/v1/ack", &entry(&first[0], "failed", None))
        .await;

    // Act
    let again = b.pop_messages("/api/v1/pop/queue/no-delay").await;

    // Assert
    assert_eq!(payloads(&again), numbers(0..2));
}

/// A seek ends the hold: a group moved past the failing message gets what is pushed next
/// at once, not after the delay its last nack set.
#[actix_rt::test]
async fn a_seek_ends_a_retry_delay_hold() {
    // Arrange: a delay far longer than the test.
    let b = TestBroker::start().await;
    configure(&b, "seek-held", json!({ "retryDelay": 600_000 })).await;
    b.push("seek-held", "Default", &numbers(0..1)).await;
    let first = b
        .pop_messages("/api/v1/pop/queue/seek-held?consumerGroup=g")
        .await;
    let (_, nack) = b
        .post(
            "/api/v1/ack/batch",
            &json!({
                "acknowledgments": [entry(&first[0], "failed", None)], "consumerGroup": "g"
            }),
        )
        .await;
    assert_eq!(nack[0]["success"], true, "{nack}");
    assert!(b
        .pop_messages("/api/v1/pop/queue/seek-held?consumerGroup=g")
        .await
        .is_empty());

    // Act
    let (status, seek) = b
        .post(
            "/api/v1/consumer-groups/g/queues/seek-held/seek",
            &json!({ "toEnd": true }),
        )
        .await;
    b.push("seek-held", "Default", &[json!("after the seek")])
        .await;
    let got = b
        .pop_messages("/api/v1/pop/queue/seek-held?consumerGroup=g")
        .await;

    // Assert
    assert!(status.is_success(), "{seek}");
    assert_eq!(payloads(&got), vec![json!("after the seek")]);
}

/// Every claim a node has tried: (wildcard, list, single claim).
async fn claims(b: &TestBroker) -> (i64, i64, i64) {
    (
        counter(b, "/sql/wildcard").await,
        counter(b, "/sql/list").await,
        counter(b, "/sql/singleClaim").await,
    )
}

/// A node that did not see the nack learns the hold from its reseed: the partition goes on
/// its wheel until the delay ends (no claim is tried before), and a consumer parked there
/// is answered then.
#[actix_rt::test]
async fn another_node_learns_the_hold_from_its_reseed_and_serves_the_message_after_it() {
    // Arrange: node a serves the first delivery and takes the nack.
    let a = TestBroker::start().await;
    configure(&a, "held-elsewhere", json!({ "retryDelay": 2_500 })).await;
    a.push("held-elsewhere", "Default", &numbers(0..2)).await;
    let first = a.pop_messages("/api/v1/pop/queue/held-elsewhere").await;
    let nacked_at = Instant::now();
    a.post("/api/v1/ack", &entry(&first[0], "failed", None))
        .await;
    let b = TestBroker::start_on(a.pg.clone(), &[("QUEEN_HOTLIST_RESEED_MS", "60000")]).await;
    let before = claims(&b).await;

    // Act
    let during = b.pop_messages("/api/v1/pop/queue/held-elsewhere").await;
    let claims_during = claims(&b).await;
    let parked = b
        .pop_messages("/api/v1/pop/queue/held-elsewhere?wait=true&timeout=8000")
        .await;
    let answered_after = nacked_at.elapsed();

    // Assert
    assert!(during.is_empty(), "{during:?}");
    assert_eq!(claims_during, before, "a claim was tried inside the hold");
    assert_eq!(payloads(&parked), numbers(0..2));
    assert!(
        answered_after >= Duration::from_millis(2_500),
        "{answered_after:?}"
    );
}
