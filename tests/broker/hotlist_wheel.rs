//! The hot-list's timed paths: a partition held by windowBuffer or by a lease comes back
//! on its own to a parked consumer (through the revisit wheel), and the minimum pop wait
//! fills a batch.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::support::fixtures::{configure, counter, first_contact, spawn_get, wait_parked};
use crate::support::{eventually, payloads, TestBroker};

/// A partition under windowBuffer is delivered after the window to a consumer that was
/// already parked, without any new push, and not before the window.
#[actix_rt::test]
async fn a_partition_under_window_buffer_reaches_a_parked_consumer_after_the_window() {
    // Arrange
    let b = TestBroker::start().await;
    configure(&b, "win", json!({ "windowBuffer": 1 })).await;
    first_contact(&b, "win", "__QUEUE_MODE__").await;
    let pop = spawn_get(&b, "/api/v1/pop/queue/win?wait=true&timeout=6000");
    wait_parked(&b, 1).await;
    let wheel_before = counter(&b, "/wakes/wheel").await;

    // Act: one push, then nothing.
    let sent = Instant::now();
    b.push("win", "Default", &[json!("w0"), json!("w1")]).await;
    let answer = pop.await.expect("pop task");
    let took = answer.at.saturating_duration_since(sent);

    // Assert: after the 1 s window, and well before the 5 s reseed could have found it.
    assert_eq!(payloads(&answer.messages()), vec![json!("w0"), json!("w1")]);
    eprintln!("windowBuffer=1 delivery to a parked consumer after {took:?}");
    assert!(
        took >= Duration::from_millis(950),
        "delivered {took:?} after the push, inside the 1 s window"
    );
    assert!(
        took < Duration::from_millis(2000),
        "delivered only {took:?} after the push (window 1 s)"
    );
    let wheel_wakes = counter(&b, "/wakes/wheel").await - wheel_before;
    assert!(wheel_wakes >= 1, "the wheel never woke the parked consumer");
}

/// A leased partition returns to the ring when its lease expires: a parked consumer gets
/// the same messages again (deliveryAttempt 2), woken by the wheel.
#[actix_rt::test]
async fn a_leased_partition_returns_to_the_ring_when_its_lease_expires() {
    // Arrange: the claim goes through the ring (first contact is done before the push).
    let b = TestBroker::start().await;
    configure(&b, "lease-back", json!({})).await;
    first_contact(&b, "lease-back", "__QUEUE_MODE__").await;
    b.push("lease-back", "Default", &[json!("m0"), json!("m1")])
        .await;
    let first = b
        .pop_messages("/api/v1/pop/queue/lease-back?leaseSeconds=1&batch=10")
        .await;
    let leased_at = Instant::now();
    assert_eq!(payloads(&first), vec![json!("m0"), json!("m1")]);
    assert!(first.iter().all(|m| m["deliveryAttempt"] == 1), "{first:?}");
    let wheel_before = counter(&b, "/wakes/wheel").await;

    // Act: never acked; a second consumer parks.
    let answer = spawn_get(
        &b,
        "/api/v1/pop/queue/lease-back?wait=true&timeout=6000&batch=10",
    )
    .await
    .expect("pop task");
    let took = answer.at.saturating_duration_since(leased_at);

    // Assert
    let again = answer.messages();
    assert_eq!(payloads(&again), vec![json!("m0"), json!("m1")]);
    assert!(again.iter().all(|m| m["deliveryAttempt"] == 2), "{again:?}");
    assert_ne!(again[0]["leaseId"], first[0]["leaseId"]);
    eprintln!("redelivered {took:?} after a 1 s lease was taken");
    assert!(
        took < Duration::from_millis(1500),
        "redelivered only {took:?} after a 1 s lease"
    );
    let wheel_wakes = counter(&b, "/wakes/wheel").await - wheel_before;
    assert!(wheel_wakes >= 1, "the wheel never woke the parked consumer");
}

/// The minimum pop wait holds an under-full claim until pushes arriving inside the window
/// fill the batch; without it the same sequence answers with fewer messages.
#[actix_rt::test]
async fn min_pop_wait_fills_a_batch_from_pushes_arriving_inside_the_window() {
    // Arrange: one queue with a 1.5 s minimum pop wait, one without. The nine pushes take
    // about 300 ms on a quiet machine; the window leaves room for a loaded one (under CI's
    // Citus sub-run a 600 ms window closed after seven).
    let b = TestBroker::start().await;
    configure(&b, "minwait", json!({ "minPopWaitTime": 1500 })).await;
    configure(&b, "nowait", json!({})).await;
    for q in ["minwait", "nowait"] {
        first_contact(&b, q, "__QUEUE_MODE__").await;
    }
    let mut answers = HashMap::new();

    for q in ["nowait", "minwait"] {
        // Act: one message, a pop for ten, then nine more one by one over ~300 ms.
        b.push(q, "Default", &[json!(0)]).await;
        let holds_before = counter(&b, "/pops/minWaitHolds").await;
        let started = Instant::now();
        let pop = spawn_get(
            &b,
            &format!("/api/v1/pop/queue/{q}?batch=10&wait=true&timeout=3000"),
        );
        if q == "minwait" {
            let held = eventually(Duration::from_secs(2), || async {
                (counter(&b, "/pops/minWaitHolds").await > holds_before).then_some(())
            })
            .await;
            assert!(held.is_some(), "the minimum pop wait never held the pop");
        }
        push_one_by_one(&b, q, 1, 9, Duration::from_millis(30)).await;
        let answer = pop.await.expect("pop task");
        let rest = b
            .pop_messages(&format!("/api/v1/pop/queue/{q}?batch=10"))
            .await;
        answers.insert(q, (answer, started, rest));
    }

    // Assert
    let (with, started, rest) = &answers["minwait"];
    let ten: Vec<Value> = (0..10).map(|i| json!(i)).collect();
    assert_eq!(
        payloads(&with.messages()),
        ten,
        "the held pop did not carry the whole batch"
    );
    assert!(rest.is_empty(), "{rest:?}");
    let took = with.at.saturating_duration_since(*started);
    eprintln!("min pop wait answered with 10 after {took:?}");
    assert!(
        took < Duration::from_millis(2500),
        "the held pop answered only after {took:?} (window 1,500 ms)"
    );
    let (without, _, _) = &answers["nowait"];
    let got = without.messages().len();
    assert!(
        (1..10).contains(&got),
        "the control queue (no minimum pop wait) answered with {got} messages"
    );
}

/// Pushes `count` single-message requests to one partition, `every` apart, starting with `first`.
async fn push_one_by_one(b: &TestBroker, queue: &str, first: i64, count: i64, every: Duration) {
    for i in first..first + count {
        b.push(queue, "Default", &[json!(i)]).await;
        // Spacing the pushes is the point of the test, not a wait for something.
        tokio::time::sleep(every).await;
    }
}
