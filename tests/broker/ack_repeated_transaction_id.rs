//! With dedup off, one transaction id can name two messages of one lease. An ack names a
//! message by its transaction id, so each ack of that id must settle one more of them:
//! acked one by one (`/api/v1/ack`), or both in one transaction bundle, both are released,
//! the cursor passes both, and nothing is delivered again.

use serde_json::{json, Value};

use crate::support::fixtures::{configure, consumer_row, entry, partition_id};
use crate::support::{payloads, TestBroker};

/// Pushes `first` then `second` under one transaction id to a queue without dedup and pops
/// both in one lease of group `g`.
async fn one_lease_holding_one_id_twice(b: &TestBroker, queue: &str) -> Vec<Value> {
    configure(b, queue, json!({"dedupWindowSeconds": 0})).await;
    for payload in ["first", "second"] {
        let (status, body) = b
            .post(
                "/api/v1/push",
                &json!({"items": [{"queue": queue, "partition": "P",
                                   "transactionId": "same-id", "payload": payload}]}),
            )
            .await;
        assert_eq!(status, 201, "{body}");
        assert_eq!(body[0]["status"], "queued", "{body}");
    }
    let batch = b
        .pop_messages(&format!(
            "/api/v1/pop/queue/{queue}?batch=10&consumerGroup=g"
        ))
        .await;
    assert_eq!(payloads(&batch), vec![json!("first"), json!("second")]);
    assert_eq!(batch[0]["leaseId"], batch[1]["leaseId"]);
    batch
}

/// Acks `messages` for group `g`, one request each, in the order given: each answer's item.
async fn ack_one_by_one(b: &TestBroker, messages: impl IntoIterator<Item = &Value>) -> Vec<Value> {
    let mut answers = Vec::new();
    for message in messages {
        let mut ack = entry(message, "completed", None);
        ack["consumerGroup"] = json!("g");
        let (status, body) = b.post("/api/v1/ack", &ack).await;
        assert_eq!(status, 200, "{body}");
        answers.push(body[0].clone());
    }
    answers
}

/// After the acks: the cursor passed both, the lease is gone, and a later pop (past the
/// lease, had it stayed) finds nothing.
async fn assert_both_released(b: &TestBroker, queue: &str, batch: &[Value]) {
    let pid = partition_id(&batch[0]);
    assert_eq!(consumer_row(b, pid, "g").await, (1, None));
    let again = b
        .pop_messages(&format!(
            "/api/v1/pop/queue/{queue}?batch=10&consumerGroup=g"
        ))
        .await;
    assert!(again.is_empty(), "delivered again: {again:?}");
}

#[actix_rt::test]
async fn two_messages_of_one_lease_with_one_transaction_id_acked_one_by_one_are_both_released() {
    // Arrange
    let b = TestBroker::start().await;
    let queue = "ack-repeat-single";
    let batch = one_lease_holding_one_id_twice(&b, queue).await;

    // Act: two single acks, each naming the id.
    let answers = ack_one_by_one(&b, batch.iter()).await;

    // Assert: the first leaves the lease held (one message left), the second releases it.
    for a in &answers {
        assert_eq!(a["success"], true, "{a}");
    }
    assert_eq!(answers[0]["leaseReleased"], false, "{answers:?}");
    assert_eq!(answers[1]["leaseReleased"], true, "{answers:?}");
    assert_both_released(&b, queue, &batch).await;
    b.stop().await;
}

#[actix_rt::test]
async fn two_messages_of_one_lease_with_one_transaction_id_acked_in_one_bundle_are_both_released() {
    // Arrange
    let b = TestBroker::start().await;
    let queue = "ack-repeat-bundle";
    let batch = one_lease_holding_one_id_twice(&b, queue).await;

    // Act
    let acks: Vec<Value> = batch
        .iter()
        .map(|m| {
            json!({"type": "ack", "transactionId": m["transactionId"],
                   "partitionId": m["partitionId"], "leaseId": m["leaseId"],
                   "status": "completed", "consumerGroup": "g"})
        })
        .collect();
    let (status, body) = b
        .post("/api/v1/transaction", &json!({ "operations": acks }))
        .await;

    // Assert
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["success"], true, "{body}");
    assert_both_released(&b, queue, &batch).await;
    b.stop().await;
}

#[actix_rt::test]
async fn a_repeated_transaction_id_acked_ahead_of_an_earlier_message_releases_each_occurrence() {
    // Arrange: one lease of `x`, then `first` and `second` under one id.
    let b = TestBroker::start().await;
    let queue = "ack-repeat-ahead";
    configure(&b, queue, json!({"dedupWindowSeconds": 0})).await;
    for (txn, payload) in [("x", "x"), ("same-id", "first"), ("same-id", "second")] {
        let (status, body) = b
            .post(
                "/api/v1/push",
                &json!({"items": [{"queue": queue, "partition": "P",
                                   "transactionId": txn, "payload": payload}]}),
            )
            .await;
        assert_eq!(status, 201, "{body}");
    }
    let batch = b
        .pop_messages(&format!(
            "/api/v1/pop/queue/{queue}?batch=10&consumerGroup=g"
        ))
        .await;
    assert_eq!(
        payloads(&batch),
        vec![json!("x"), json!("first"), json!("second")]
    );

    // Act: the repeated id twice (both ahead of `x`), then `x`.
    let answers = ack_one_by_one(&b, [1, 2, 0].map(|k| &batch[k])).await;

    // Assert
    for a in &answers {
        assert_eq!(a["success"], true, "{a}");
    }
    assert_eq!(answers[2]["leaseReleased"], true, "{answers:?}");
    let pid = partition_id(&batch[0]);
    assert_eq!(consumer_row(&b, pid, "g").await, (2, None));
    b.stop().await;
}
