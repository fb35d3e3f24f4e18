//! Pop leases: a partition leased by one consumer does not block another partition,
//! an auto-acked pop takes no lease, and an expired lease is redelivered.

use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::support::fixtures::{consumer_row, offsets, partition_id};
use crate::support::{eventually, payloads, TestBroker};

/// A partition leased by one consumer does not block another partition for the same group.
#[actix_rt::test]
async fn a_leased_partition_does_not_block_another_partition_for_the_same_group() {
    // Arrange
    let b = TestBroker::start().await;
    b.push("indep", "a", &[json!("a0"), json!("a1"), json!("a2")])
        .await;
    b.push("indep", "b", &[json!("b0"), json!("b1"), json!("b2")])
        .await;

    // Act
    let first = b.pop_messages("/api/v1/pop/queue/indep?batch=10").await;
    let second = b.pop_messages("/api/v1/pop/queue/indep?batch=10").await;
    let third = b.pop_messages("/api/v1/pop/queue/indep?batch=10").await;

    // Assert
    let mut got = vec![payloads(&first), payloads(&second)];
    got.sort_by_key(|p| p.first().map(Value::to_string));
    assert_eq!(
        got,
        vec![
            vec![json!("a0"), json!("a1"), json!("a2")],
            vec![json!("b0"), json!("b1"), json!("b2")],
        ]
    );
    assert_ne!(first[0]["leaseId"], second[0]["leaseId"]);
    assert!(third.is_empty(), "both partitions are leased: {third:?}");
}

/// An auto-acked pop has no lease, moves the cursor, and never comes back (first pop and later).
#[actix_rt::test]
async fn an_auto_acked_pop_has_no_lease_and_is_never_redelivered() {
    // Arrange
    let b = TestBroker::start().await;
    b.push("auto", "Default", &[json!(0), json!(1), json!(2)])
        .await;

    // Act: a one-second lease override would bring the messages back if a lease were taken.
    let path = "/api/v1/pop/queue/auto?autoAck=true&leaseSeconds=1&batch=2";
    let (first_status, first) = b.get(path).await;
    let (second_status, second) = b.get(path).await;
    let started = Instant::now();
    let (later, later_body) = b.get("/api/v1/pop/queue/auto?wait=true&timeout=2000").await;

    // Assert
    assert_eq!(first_status, StatusCode::OK, "{first}");
    assert_eq!(second_status, StatusCode::OK, "{second}");
    let mut messages = first["messages"].as_array().expect("messages").clone();
    messages.extend(
        second["messages"]
            .as_array()
            .expect("messages")
            .iter()
            .cloned(),
    );
    assert_eq!(payloads(&messages), vec![json!(0), json!(1), json!(2)]);
    assert_eq!(first["leaseId"], "");
    assert_eq!(second["leaseId"], "");
    assert!(messages.iter().all(|m| m["leaseId"] == ""), "{messages:?}");
    assert_eq!(later, StatusCode::NO_CONTENT, "redelivered: {later_body}");
    assert!(started.elapsed() >= Duration::from_millis(1500));
    let pid = partition_id(&messages[0]);
    let (committed, worker) = consumer_row(&b, pid, "__QUEUE_MODE__").await;
    assert_eq!(committed, 2);
    assert_eq!(worker, None);
}

/// When a lease expires, the same messages are delivered again with deliveryAttempt 2.
#[actix_rt::test]
async fn an_expired_lease_is_redelivered_with_delivery_attempt_two() {
    // Arrange
    let b = TestBroker::start().await;
    b.push("expiry", "Default", &[json!("m0"), json!("m1")])
        .await;
    let first = b
        .pop_messages("/api/v1/pop/queue/expiry?leaseSeconds=1")
        .await;
    assert_eq!(payloads(&first), vec![json!("m0"), json!("m1")]);
    assert!(first.iter().all(|m| m["deliveryAttempt"] == 1), "{first:?}");
    let while_leased = b.pop_messages("/api/v1/pop/queue/expiry").await;
    assert!(while_leased.is_empty(), "delivered under a live lease");

    // Act
    let again = eventually(Duration::from_secs(5), || async {
        let m = b.pop_messages("/api/v1/pop/queue/expiry").await;
        (!m.is_empty()).then_some(m)
    })
    .await
    .expect("redelivered after the lease expired");

    // Assert
    assert_eq!(ids(&again), ids(&first));
    assert_eq!(offsets(&again), vec![0, 1]);
    assert!(again.iter().all(|m| m["deliveryAttempt"] == 2), "{again:?}");
    assert_ne!(again[0]["leaseId"], first[0]["leaseId"]);
}

/// The message ids of popped messages.
fn ids(messages: &[Value]) -> Vec<Value> {
    messages.iter().map(|m| m["id"].clone()).collect()
}
