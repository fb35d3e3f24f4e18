//! A client that goes away mid-pop, or a pop whose claim fails, loses no partition: the
//! candidates lent to the pop go back to the group's ring.

use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::support::fixtures::{
    configure, first_contact, group_stats, metrics, spawn_get, spawn_get_with,
};
use crate::support::lock_waiters::lock_waiter_within;
use crate::support::{eventually, payloads, TestBroker};

/// A client that drops its connection while its pop's claim is blocked in the database
/// loses no partition: the lent candidate goes back to the group, and a new consumer gets
/// the message.
#[actix_rt::test]
async fn a_client_dropping_its_connection_mid_pop_loses_no_partition_from_the_ring() {
    // Arrange: no periodic reseed, so only the ring can bring the partition back.
    let b = TestBroker::start_with(&[("QUEEN_HOTLIST_RESEED_MS", "600000")]).await;
    configure(&b, "dropped", json!({})).await;
    first_contact(&b, "dropped", "__QUEUE_MODE__").await;
    b.push("dropped", "Default", &[json!("kept")]).await;
    let tracked = |m: &Value| {
        let g = group_stats(m, "dropped", "__QUEUE_MODE__").expect("the group actor is alive");
        (
            g["ring"].as_u64().unwrap(),
            g["wheel"].as_u64().unwrap(),
            g["lent"].as_u64().unwrap(),
        )
    };
    assert_eq!(
        tracked(&metrics(&b).await),
        (1, 0, 0),
        "the push is in the ring"
    );
    let mut locker = b.sql().await;
    let lock = locker.transaction().await.unwrap();
    lock.batch_execute("LOCK TABLE queen.log_segments IN ACCESS EXCLUSIVE MODE")
        .await
        .unwrap();
    let impatient = reqwest::Client::builder()
        .timeout(Duration::from_millis(1000))
        .build()
        .unwrap();

    // Act: the pop's claim waits on the lock; the client gives up and closes.
    let url = b.url("/api/v1/pop/queue/dropped?leaseSeconds=1&batch=10");
    let gave_up = tokio::spawn(async move { impatient.get(&url).send().await });
    let blocked = lock_waiter_within(&b, Duration::from_secs(3)).await;
    assert!(blocked, "the pop's claim never waited on the lock");
    let mid = tracked(&metrics(&b).await);
    let outcome = gave_up.await.expect("client task");
    assert!(
        outcome.is_err(),
        "the client should have timed out: {outcome:?}"
    );
    let after_drop = tracked(&metrics(&b).await);
    lock.commit().await.unwrap();

    // Assert. Either way the partition must stay tracked: if the server drops the pop's
    // future when the client leaves, the drop guard hands the lent partition back; if it
    // keeps running it (actix-web does, see `after_drop`), the claim commits once the lock
    // goes and its lease brings the partition back through the wheel. The guard alone is
    // pinned by `a_pop_whose_claim_fails_mid_flight_loses_no_partition_from_the_ring`.
    eprintln!("(ring, wheel, lent): mid-claim {mid:?}, client gone {after_drop:?}");
    assert_eq!(mid.2, 1, "the blocked pop holds the partition as lent");
    let settled = eventually(Duration::from_secs(3), || async {
        let (ring, wheel, lent) = tracked(&metrics(&b).await);
        (lent == 0 && ring + wheel == 1).then_some((ring, wheel, lent))
    })
    .await;
    assert!(
        settled.is_some(),
        "the partition left the ring: (ring, wheel, lent) = {:?}",
        tracked(&metrics(&b).await)
    );
    let started = Instant::now();
    let answer = spawn_get_with(
        b.http.clone(),
        b.url("/api/v1/pop/queue/dropped?wait=true&timeout=5000&batch=10"),
    )
    .await
    .expect("pop task");
    assert_eq!(payloads(&answer.messages()), vec![json!("kept")]);
    let took = answer.at.saturating_duration_since(started);
    assert!(
        took < Duration::from_millis(2500),
        "redelivered only after {took:?} (lease 1 s + backoff 1 s)"
    );
}

/// A pop whose claim fails in the database (here a statement timeout while the claim waits
/// on a lock) hands its lent candidates back: the partition stays in the ring and the next
/// consumer gets the message. This is the drop guard's deterministic path (the same one a
/// cancelled pop takes).
#[actix_rt::test]
async fn a_pop_whose_claim_fails_mid_flight_loses_no_partition_from_the_ring() {
    // Arrange: no periodic reseed, so only the ring can bring the partition back.
    let b = TestBroker::start_with(&[
        ("QUEEN_HOTLIST_RESEED_MS", "600000"),
        ("QUEEN_STATEMENT_TIMEOUT_MS", "500"),
    ])
    .await;
    configure(&b, "failed-claim", json!({})).await;
    first_contact(&b, "failed-claim", "__QUEUE_MODE__").await;
    b.push("failed-claim", "Default", &[json!("kept")]).await;
    let tracked = |m: &Value| {
        let g = group_stats(m, "failed-claim", "__QUEUE_MODE__").expect("the group actor is alive");
        (
            g["ring"].as_u64().unwrap(),
            g["wheel"].as_u64().unwrap(),
            g["lent"].as_u64().unwrap(),
        )
    };
    assert_eq!(
        tracked(&metrics(&b).await),
        (1, 0, 0),
        "the push is in the ring"
    );
    let mut locker = b.sql().await;
    let lock = locker.transaction().await.unwrap();
    lock.batch_execute("LOCK TABLE queen.log_segments IN ACCESS EXCLUSIVE MODE")
        .await
        .unwrap();

    // Act: the claim waits on the lock until the statement timeout cancels it.
    let (status, body) = b
        .get("/api/v1/pop/queue/failed-claim?leaseSeconds=1&batch=10")
        .await;
    let while_locked = eventually(Duration::from_secs(3), || async {
        let t = tracked(&metrics(&b).await);
        (t == (1, 0, 0)).then_some(t)
    })
    .await;
    lock.rollback().await.unwrap();
    let answer = spawn_get(
        &b,
        "/api/v1/pop/queue/failed-claim?wait=true&timeout=3000&batch=10",
    )
    .await
    .expect("pop task");

    // Assert
    assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR, "{body}");
    assert!(
        body["error"]
            .as_str()
            .unwrap_or_default()
            .contains("timeout"),
        "{body}"
    );
    assert!(
        while_locked.is_some(),
        "the failed pop did not hand its partition back: (ring, wheel, lent) = {:?}",
        tracked(&metrics(&b).await)
    );
    let again = answer.messages();
    assert_eq!(payloads(&again), vec![json!("kept")]);
    assert_eq!(
        again[0]["deliveryAttempt"], 1,
        "the failed claim took a lease"
    );
}
