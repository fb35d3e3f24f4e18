//! A lease that expires is a delivery attempt against `retryLimit`: a message that every
//! consumer takes and never settles ends in the dead letters (or is skipped when the
//! queue keeps none) instead of blocking its ordered partition forever.

use std::time::Duration;

use serde_json::{json, Value};

use crate::support::fixtures::{configure, entry, numbers, offsets, sql_count};
use crate::support::{eventually, payloads, TestBroker};

/// Pops one message at a time until the pop delivers something, then returns it.
async fn next_delivery(b: &TestBroker, queue: &str) -> Vec<Value> {
    eventually(Duration::from_secs(10), || async {
        let m = b
            .pop_messages(&format!("/api/v1/pop/queue/{queue}?batch=1"))
            .await;
        (!m.is_empty()).then_some(m)
    })
    .await
    .expect("a delivery within 10 s")
}

/// With leases of 1 s and retryLimit 2, a message whose leases all expire is delivered
/// three times (the first delivery and two retries), then dead-lettered, and the next pop
/// gets the message after it.
#[actix_rt::test]
async fn a_message_whose_leases_keep_expiring_is_dead_lettered_after_the_retry_limit() {
    // Arrange
    let b = TestBroker::start().await;
    configure(&b, "crashy", json!({ "leaseTime": 1, "retryLimit": 2 })).await;
    b.push("crashy", "Default", &[json!("poison"), json!("next")])
        .await;

    // Act: a consumer that pops and never acks.
    let mut attempts = Vec::new();
    let after = loop {
        let got = next_delivery(&b, "crashy").await;
        if got[0]["data"] != "poison" || attempts.len() > 5 {
            break got;
        }
        attempts.push(got[0]["deliveryAttempt"].clone());
    };

    // Assert
    assert_eq!(attempts, vec![json!(1), json!(2), json!(3)]);
    assert_eq!(payloads(&after), vec![json!("next")]);
    assert_eq!(offsets(&after), vec![1]);
    let (_, dlq) = b.get("/api/v1/dlq?queue=crashy&limit=10&offset=0").await;
    let letters = dlq["messages"].as_array().expect("messages");
    assert_eq!(letters.len(), 1, "{dlq}");
    assert_eq!(letters[0]["data"], "poison");
    assert_eq!(letters[0]["transactionId"], "lease-expired:0");
    assert_eq!(letters[0]["retryCount"], 3);
    let acked = b.ack_all(&after, "completed", None).await;
    assert_eq!(acked[0]["success"], true, "{acked:?}");
}

/// Nacks and expiries spend the same budget: one nack then two expiries, with retryLimit
/// 2, is the end of the message.
#[actix_rt::test]
async fn nacks_and_lease_expiries_spend_the_same_retry_budget() {
    // Arrange
    let b = TestBroker::start().await;
    configure(&b, "mixed", json!({ "leaseTime": 1, "retryLimit": 2 })).await;
    b.push("mixed", "Default", &numbers(0..2)).await;
    let first = next_delivery(&b, "mixed").await;
    let (_, nack) = b
        .post("/api/v1/ack", &entry(&first[0], "failed", Some("boom")))
        .await;
    assert_eq!(nack[0]["dlq"], false, "{nack}");

    // Act: the second and third deliveries expire.
    let second = next_delivery(&b, "mixed").await;
    let third = next_delivery(&b, "mixed").await;
    let fourth = next_delivery(&b, "mixed").await;

    // Assert
    assert_eq!(payloads(&second), numbers(0..1));
    assert_eq!(payloads(&third), numbers(0..1));
    assert_eq!(payloads(&fourth), numbers(1..2), "offset 0 is spent");
    assert_eq!(
        sql_count(&b, "SELECT count(*) FROM queen.dead_letters").await,
        1
    );
}

/// With `deadLetterQueue: false` the spent message is skipped: nothing is filed, and the
/// partition moves on to the next message.
#[actix_rt::test]
async fn with_dead_letters_off_a_spent_message_is_skipped() {
    // Arrange
    let b = TestBroker::start().await;
    configure(
        &b,
        "crashy-skip",
        json!({ "leaseTime": 1, "retryLimit": 0, "deadLetterQueue": false }),
    )
    .await;
    b.push("crashy-skip", "Default", &[json!("poison"), json!("next")])
        .await;
    let first = next_delivery(&b, "crashy-skip").await;
    assert_eq!(payloads(&first), vec![json!("poison")]);

    // Act: the only allowed delivery expires.
    let after = next_delivery(&b, "crashy-skip").await;

    // Assert
    assert_eq!(payloads(&after), vec![json!("next")]);
    assert_eq!(
        sql_count(&b, "SELECT count(*) FROM queen.dead_letters").await,
        0
    );
}

/// The expiry is charged to the first message the lease left undone, not to the first it
/// delivered: after the first of three is acked, an expiry with retryLimit 0 files the
/// second, and the third comes next.
#[actix_rt::test]
async fn an_expiry_charges_the_first_message_the_lease_left_undone() {
    // Arrange
    let b = TestBroker::start().await;
    configure(&b, "half-done", json!({ "leaseTime": 1, "retryLimit": 0 })).await;
    b.push("half-done", "Default", &numbers(0..3)).await;
    let first = b.pop_messages("/api/v1/pop/queue/half-done?batch=3").await;
    assert_eq!(payloads(&first), numbers(0..3));
    let done = b.ack_all(&first[..1], "completed", None).await;
    assert_eq!(done[0]["success"], true, "{done:?}");

    // Act: the lease expires with offsets 1 and 2 undone.
    let next = next_delivery(&b, "half-done").await;

    // Assert
    assert_eq!(payloads(&next), numbers(2..3));
    let filed: Vec<i64> = b
        .sql()
        .await
        .query("SELECT message_offset FROM queen.dead_letters", &[])
        .await
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert_eq!(filed, vec![1]);
}
