//! The whole-lease ack: an ack completing every delivered message of its lease is settled by
//! one plain statement (`acks.wholeLease`); every other shape falls back to `log_ack_v2`
//! (`acks.itemized`) and answers as it always did.

use std::time::Duration;

use serde_json::{json, Value};

use crate::support::fixtures::{configure, consumer_row, counter, entry, numbers, partition_id};
use crate::support::{citus, payloads, TestBroker};

/// Both ack counters, read now: (whole lease, itemized).
async fn paths(b: &TestBroker) -> (i64, i64) {
    (
        counter(b, "/acks/wholeLease").await,
        counter(b, "/acks/itemized").await,
    )
}

/// The counters `before` plus `whole` acks settled by the whole-lease statement and
/// `itemized` by `log_ack_v2`. On the Citus layout, which leaves the one-statement ack out,
/// every ack is itemized.
fn expected(before: (i64, i64), whole: i64, itemized: i64) -> (i64, i64) {
    if citus::layout() {
        (before.0, before.1 + whole + itemized)
    } else {
        (before.0 + whole, before.1 + itemized)
    }
}

/// A lease spanning three segments, acked completely, is settled by the one statement: the
/// cursor moves to its end and the lease is released.
#[actix_rt::test]
async fn a_lease_over_three_segments_acked_completely_takes_the_whole_lease_path() {
    // Arrange: three pushes, three segments of one partition, one pop over all of them.
    let b = TestBroker::start().await;
    b.push("wl-segments", "P", &numbers(0..2)).await;
    b.push("wl-segments", "P", &numbers(2..5)).await;
    b.push("wl-segments", "P", &numbers(5..7)).await;
    let batch = b
        .pop_messages("/api/v1/pop/queue/wl-segments?batch=10")
        .await;
    assert_eq!(payloads(&batch), numbers(0..7));
    let pid = partition_id(&batch[0]);
    let before = paths(&b).await;

    // Act: acked in reverse order, one message twice.
    let mut shuffled: Vec<Value> = batch.iter().rev().cloned().collect();
    shuffled.push(batch[3].clone());
    let answers = b.ack_all(&shuffled, "completed", None).await;

    // Assert
    assert_eq!(answers.len(), 8);
    for a in &answers {
        assert_eq!(a["success"], true, "{a}");
        assert_eq!(a["leaseReleased"], true, "{a}");
    }
    assert_eq!(paths(&b).await, expected(before, 1, 0));
    assert_eq!(consumer_row(&b, pid, "__QUEUE_MODE__").await, (6, None));
    b.push("wl-segments", "P", &numbers(7..8)).await;
    let next = b
        .pop_messages("/api/v1/pop/queue/wl-segments?batch=10")
        .await;
    assert_eq!(payloads(&next), numbers(7..8));
}

/// A partial ack goes item by item and keeps the lease; the ack of the rest then completes
/// what is left of the lease and takes the whole-lease path from the moved cursor.
#[actix_rt::test]
async fn a_partial_ack_is_itemized_and_the_rest_completes_the_lease_in_one_statement() {
    // Arrange
    let b = TestBroker::start().await;
    b.push("wl-partial", "P", &numbers(0..4)).await;
    let batch = b.pop_messages("/api/v1/pop/queue/wl-partial?batch=4").await;
    assert_eq!(payloads(&batch), numbers(0..4));
    let pid = partition_id(&batch[0]);
    let lease = batch[0]["leaseId"].as_str().map(str::to_owned);
    let before = paths(&b).await;

    // Act
    let first = b.ack_all(&batch[..2], "completed", None).await;
    let after_first = paths(&b).await;
    let cursor_after_first = consumer_row(&b, pid, "__QUEUE_MODE__").await;
    let rest = b.ack_all(&batch[2..], "completed", None).await;

    // Assert
    assert!(
        first
            .iter()
            .all(|a| a["success"] == true && a["leaseReleased"] == false),
        "{first:?}"
    );
    assert_eq!(after_first, expected(before, 0, 1));
    assert_eq!(cursor_after_first, (1, lease));
    assert!(
        rest.iter()
            .all(|a| a["success"] == true && a["leaseReleased"] == true),
        "{rest:?}"
    );
    assert_eq!(paths(&b).await, expected(before, 1, 1));
    assert_eq!(consumer_row(&b, pid, "__QUEUE_MODE__").await, (3, None));
}

/// As many items as the lease has messages, but one of them names a message the lease does
/// not hold: the one statement refuses it, and the itemized ack answers each item.
#[actix_rt::test]
async fn an_ack_naming_a_message_outside_the_lease_is_answered_item_by_item() {
    // Arrange
    let b = TestBroker::start().await;
    b.push("wl-foreign", "P", &numbers(0..3)).await;
    let batch = b.pop_messages("/api/v1/pop/queue/wl-foreign?batch=3").await;
    assert_eq!(batch.len(), 3);
    let pid = partition_id(&batch[0]);
    let lease = batch[0]["leaseId"].as_str().map(str::to_owned);
    let mut foreign = batch[2].clone();
    foreign["transactionId"] = json!("never-pushed");
    let before = paths(&b).await;

    // Act
    let items = vec![
        entry(&batch[0], "completed", None),
        entry(&batch[1], "completed", None),
        entry(&foreign, "completed", None),
    ];
    let (status, answers) = b
        .post("/api/v1/ack/batch", &json!({ "acknowledgments": items }))
        .await;

    // Assert
    assert_eq!(status, 200, "{answers}");
    assert_eq!(answers[0]["success"], true, "{answers}");
    assert_eq!(answers[1]["success"], true, "{answers}");
    assert_eq!(answers[2]["success"], false, "{answers}");
    assert_eq!(paths(&b).await, expected(before, 0, 1));
    assert_eq!(consumer_row(&b, pid, "__QUEUE_MODE__").await, (1, lease));
}

/// With dedup off, one transaction id can name two messages of a lease; the one statement
/// cannot tell them apart and leaves the ack to the itemized path, which acks both as
/// before.
#[actix_rt::test]
async fn a_lease_holding_one_transaction_id_twice_is_acked_item_by_item() {
    // Arrange
    let b = TestBroker::start().await;
    configure(&b, "wl-repeat", json!({"dedupWindowSeconds": 0})).await;
    for payload in [json!("first"), json!("second")] {
        let (status, body) = b
            .post(
                "/api/v1/push",
                &json!({"items": [{"queue": "wl-repeat", "partition": "P",
                                   "transactionId": "same-id", "payload": payload}]}),
            )
            .await;
        assert_eq!(status, 201, "{body}");
    }
    let batch = b.pop_messages("/api/v1/pop/queue/wl-repeat?batch=2").await;
    assert_eq!(payloads(&batch), vec![json!("first"), json!("second")]);
    let pid = partition_id(&batch[0]);
    let before = paths(&b).await;

    // Act
    let answers = b.ack_all(&batch, "completed", None).await;

    // Assert
    assert!(answers.iter().all(|a| a["success"] == true), "{answers:?}");
    assert_eq!(paths(&b).await, expected(before, 0, 1));
    assert_eq!(consumer_row(&b, pid, "__QUEUE_MODE__").await, (1, None));
}

/// A complete ack of an expired lease is refused, as every ack of an expired lease is.
#[actix_rt::test]
async fn a_complete_ack_of_an_expired_lease_is_refused() {
    // Arrange
    let b = TestBroker::start().await;
    b.push("wl-expired", "P", &numbers(0..2)).await;
    let batch = b
        .pop_messages("/api/v1/pop/queue/wl-expired?batch=2&leaseSeconds=1")
        .await;
    assert_eq!(batch.len(), 2);
    let pid = partition_id(&batch[0]);
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    let before = paths(&b).await;

    // Act
    let answers = b.ack_all(&batch, "completed", None).await;

    // Assert
    for a in &answers {
        assert_eq!(a["success"], false, "{a}");
        assert_eq!(a["error"], "Invalid or expired lease", "{a}");
    }
    assert_eq!(paths(&b).await, expected(before, 0, 1));
    assert_eq!(consumer_row(&b, pid, "__QUEUE_MODE__").await.0, -1);
}
