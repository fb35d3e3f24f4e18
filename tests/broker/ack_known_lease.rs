//! The known-lease ack: the node that served a pop books what its claim leased, and a
//! complete ack of that lease through the same node is settled from the book
//! (`acks.knownLease`) by a statement that only checks the lease is still the one granted.
//! Through another node, or once the lease changed, the ack is proven in SQL as before.

use serde_json::Value;

use crate::support::fixtures::{consumer_row, counter, numbers, partition_id};
use crate::support::{citus, payloads, TestBroker};

/// The ack counters, read now: (known lease, whole lease, itemized).
async fn paths(b: &TestBroker) -> (i64, i64, i64) {
    (
        counter(b, "/acks/knownLease").await,
        counter(b, "/acks/wholeLease").await,
        counter(b, "/acks/itemized").await,
    )
}

/// The counters `before` plus `known` acks settled from the lease book, `whole` settled in
/// one statement (those from the book among them) and `itemized` by `log_ack_v2`. On the
/// Citus layout, which leaves both one-statement acks out, every ack is itemized.
fn expected(before: (i64, i64, i64), known: i64, whole: i64, itemized: i64) -> (i64, i64, i64) {
    if citus::layout() {
        (before.0, before.1, before.2 + whole + itemized)
    } else {
        (before.0 + known, before.1 + whole, before.2 + itemized)
    }
}

/// A first pop of a group goes through the procedure that registers it; after one pop and
/// ack of a first message the group's actor claims with the single-statement claim, the
/// one that books.
async fn warm_up(b: &TestBroker, queue: &str) {
    b.push(queue, "P", &numbers(100..101)).await;
    let first = b
        .pop_messages(&format!("/api/v1/pop/queue/{queue}?batch=1"))
        .await;
    assert_eq!(payloads(&first), numbers(100..101));
    let acked = b.ack_all(&first, "completed", None).await;
    assert!(acked.iter().all(|a| a["success"] == true), "{acked:?}");
}

/// A complete ack through the node that served the pop takes the known-lease path: the
/// cursor moves to the lease's end, the lease is released and the next messages come next.
#[actix_rt::test]
async fn a_complete_ack_through_the_serving_node_is_settled_from_its_lease_book() {
    // Arrange: two segments, one pop over both.
    let b = TestBroker::start().await;
    warm_up(&b, "kl-same").await;
    b.push("kl-same", "P", &numbers(0..3)).await;
    b.push("kl-same", "P", &numbers(3..5)).await;
    let batch = b.pop_messages("/api/v1/pop/queue/kl-same?batch=10").await;
    assert_eq!(payloads(&batch), numbers(0..5));
    let pid = partition_id(&batch[0]);
    let before = paths(&b).await;

    // Act: acked in another order than delivered.
    let shuffled: Vec<Value> = batch.iter().rev().cloned().collect();
    let answers = b.ack_all(&shuffled, "completed", None).await;

    // Assert
    for a in &answers {
        assert_eq!(a["success"], true, "{a}");
        assert_eq!(a["leaseReleased"], true, "{a}");
    }
    assert_eq!(paths(&b).await, expected(before, 1, 1, 0));
    assert_eq!(consumer_row(&b, pid, "__QUEUE_MODE__").await, (5, None));
    b.push("kl-same", "P", &numbers(5..6)).await;
    let next = b.pop_messages("/api/v1/pop/queue/kl-same?batch=10").await;
    assert_eq!(payloads(&next), numbers(5..6));
}

/// An ack of only some of the booked messages cannot use the book: it is itemized, keeps
/// the lease, and the rest then completes it through the whole-lease statement.
#[actix_rt::test]
async fn a_partial_ack_through_the_serving_node_is_itemized_and_keeps_the_lease() {
    // Arrange
    let b = TestBroker::start().await;
    warm_up(&b, "kl-partial").await;
    b.push("kl-partial", "P", &numbers(0..4)).await;
    let batch = b.pop_messages("/api/v1/pop/queue/kl-partial?batch=4").await;
    let pid = partition_id(&batch[0]);
    let lease = batch[0]["leaseId"].as_str().map(str::to_owned);
    let before = paths(&b).await;

    // Act
    let first = b.ack_all(&batch[..3], "completed", None).await;
    let cursor_after_first = consumer_row(&b, pid, "__QUEUE_MODE__").await;
    let rest = b.ack_all(&batch[3..], "completed", None).await;

    // Assert
    assert!(first.iter().all(|a| a["success"] == true), "{first:?}");
    assert_eq!(cursor_after_first, (3, lease));
    assert!(rest.iter().all(|a| a["leaseReleased"] == true), "{rest:?}");
    assert_eq!(paths(&b).await, expected(before, 0, 1, 1));
    assert_eq!(consumer_row(&b, pid, "__QUEUE_MODE__").await, (4, None));
}

/// Through another node the book is not there: the ack is proven by the whole-lease
/// statement, with the same answers.
#[actix_rt::test]
async fn a_complete_ack_through_another_node_is_proven_in_sql() {
    // Arrange
    let a = TestBroker::start().await;
    let b = TestBroker::start_on(a.pg.clone(), &[]).await;
    warm_up(&a, "kl-other").await;
    a.push("kl-other", "P", &numbers(0..3)).await;
    let batch = a.pop_messages("/api/v1/pop/queue/kl-other?batch=3").await;
    let pid = partition_id(&batch[0]);
    let before_a = paths(&a).await;
    let before_b = paths(&b).await;

    // Act
    let answers = b.ack_all(&batch, "completed", None).await;

    // Assert
    assert!(
        answers
            .iter()
            .all(|x| x["success"] == true && x["leaseReleased"] == true),
        "{answers:?}"
    );
    assert_eq!(paths(&b).await, expected(before_b, 0, 1, 0));
    assert_eq!(paths(&a).await, before_a);
    assert_eq!(consumer_row(&b, pid, "__QUEUE_MODE__").await, (3, None));
}

/// The book is only a hint. A lease released through another node and claimed again by
/// a second consumer is still in the serving node's book; a repeated ack of the first lease
/// through that node must not touch the second lease, and answers as the other node does.
#[actix_rt::test]
async fn a_booked_lease_released_elsewhere_and_claimed_again_is_left_alone() {
    // Arrange: node A serves the pop, node B releases it, B serves the next pop.
    let a = TestBroker::start().await;
    let b = TestBroker::start_on(a.pg.clone(), &[]).await;
    warm_up(&a, "kl-stale").await;
    let booked_before = paths(&a).await.0;
    a.push("kl-stale", "P", &numbers(0..3)).await;
    a.push("kl-stale", "P", &numbers(3..6)).await;
    let first = a.pop_messages("/api/v1/pop/queue/kl-stale?batch=3").await;
    assert_eq!(payloads(&first), numbers(0..3));
    let pid = partition_id(&first[0]);
    let released = b.ack_all(&first, "completed", None).await;
    assert!(
        released.iter().all(|x| x["success"] == true),
        "{released:?}"
    );
    let second = b.pop_messages("/api/v1/pop/queue/kl-stale?batch=3").await;
    assert_eq!(payloads(&second), numbers(3..6));
    let second_lease = second[0]["leaseId"].as_str().map(str::to_owned);
    let repeated_on_b = b.ack_all(&first, "completed", None).await;
    let before_a = paths(&a).await;

    // Act
    let repeated_on_a = a.ack_all(&first, "completed", None).await;

    // Assert: A answers as B did, nothing moved, the second lease is intact.
    let verdicts = |answers: &[Value]| -> Vec<(Value, Value)> {
        answers
            .iter()
            .map(|x| (x["success"].clone(), x["error"].clone()))
            .collect()
    };
    assert_eq!(verdicts(&repeated_on_a), verdicts(&repeated_on_b));
    assert_eq!(paths(&a).await.0, before_a.0);
    assert_eq!(
        before_a.0, booked_before,
        "no ack through A used the book yet"
    );
    assert_eq!(
        consumer_row(&a, pid, "__QUEUE_MODE__").await,
        (3, second_lease)
    );
    let done = b.ack_all(&second, "completed", None).await;
    assert!(done.iter().all(|x| x["success"] == true), "{done:?}");
    assert_eq!(consumer_row(&a, pid, "__QUEUE_MODE__").await, (6, None));
}
