//! `POST /api/v1/transaction`: pushes and acks committed together or not at all, the
//! `requiredLeases` fence and single-lease borrowing, dedup like push, nacks like
//! `/api/v1/ack`, concurrent bundles without losses or duplicates, and 400 for malformed
//! bodies.

use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::support::fixtures::{
    configure, consumer_row, first_contact, numbers, offsets, partition_id, spawn_get, sql_count,
    wait_parked,
};
use crate::support::{payloads, TestBroker};

mod binary;
mod bodies;
mod concurrency;
mod riders;

const QUEUE_MODE: &str = "__QUEUE_MODE__";

/// POSTs a bundle; asserts HTTP 200 (bundles answer 200 even when refused).
async fn bundle(b: &TestBroker, body: &Value) -> Value {
    let (status, answer) = b.post("/api/v1/transaction", body).await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    assert!(answer.is_object(), "a bundle answers an object: {answer}");
    answer
}

/// An ack operation for a popped message, carrying its lease.
fn ack_op(message: &Value, status: &str) -> Value {
    json!({
        "type": "ack",
        "transactionId": message["transactionId"],
        "partitionId": message["partitionId"],
        "status": status,
        "leaseId": message["leaseId"],
    })
}

/// A push operation of numbered payloads into one queue.
fn push_op(queue: &str, payloads: &[Value]) -> Value {
    let items: Vec<Value> = payloads
        .iter()
        .map(|p| json!({ "queue": queue, "payload": p }))
        .collect();
    json!({ "type": "push", "items": items })
}

/// Segments stored for a queue.
async fn segments_of(b: &TestBroker, queue: &str) -> i64 {
    sql_count(
        b,
        &format!(
            "SELECT count(*) FROM queen.log_segments s \
             JOIN queen.log_partitions p ON p.id = s.partition_id \
             JOIN queen.queues q ON q.id = p.queue_id WHERE q.name = '{queue}'"
        ),
    )
    .await
}

/// Asserts a refused bundle: success false, the failing index, and nothing stored in `dst`.
async fn assert_rolled_back(b: &TestBroker, answer: &Value, failed_index: i64, dst: &str) {
    assert_eq!(answer["success"], false, "{answer}");
    assert_eq!(answer["failedIndex"], failed_index, "{answer}");
    assert!(
        answer["error"].as_str().is_some_and(|e| !e.is_empty()),
        "{answer}"
    );
    assert_eq!(
        segments_of(b, dst).await,
        0,
        "the bundle's pushes were stored"
    );
    let popped = b.pop_messages(&format!("/api/v1/pop/queue/{dst}")).await;
    assert!(popped.is_empty(), "{popped:?}");
}

/// Pushes one message to `queue` and pops it under a lease.
async fn one_leased(b: &TestBroker, queue: &str) -> Value {
    b.push(queue, "Default", &numbers(0..1)).await;
    let popped = b.pop_messages(&format!("/api/v1/pop/queue/{queue}")).await;
    assert_eq!(popped.len(), 1);
    popped[0].clone()
}

/// Expires every lease of a partition in place (the clock moving past `leaseTime`).
async fn expire_leases(b: &TestBroker, pid: i64) {
    b.sql()
        .await
        .execute(
            "UPDATE queen.log_consumers SET lease_expires_at = now() - interval '1 second' \
             WHERE partition_id = $1",
            &[&pid],
        )
        .await
        .unwrap();
}

/// A push and an ack in one bundle are both applied: the new message is visible, the
/// acked one is done and its lease released.
#[actix_rt::test]
async fn a_bundle_of_a_push_and_an_ack_commits_both_together() {
    // Arrange
    let b = TestBroker::start().await;
    let message = one_leased(&b, "t-src").await;
    let pid = partition_id(&message);

    // Act
    let answer = bundle(
        &b,
        &json!({
            "operations": [push_op("t-dst", &[json!("new")]), ack_op(&message, "completed")],
            "requiredLeases": [message["leaseId"]],
        }),
    )
    .await;

    // Assert
    assert_eq!(answer["success"], true, "{answer}");
    assert!(answer["transactionId"].is_string(), "{answer}");
    let results = answer["results"].as_array().expect("results");
    assert_eq!(results.len(), 2, "{answer}");
    assert_eq!(results[0]["index"], 0);
    assert_eq!(results[0]["type"], "push");
    assert_eq!(results[0]["status"], "queued");
    assert!(results[0]["messageId"].is_string(), "{answer}");
    assert_eq!(results[1]["index"], 1);
    assert_eq!(results[1]["type"], "ack");
    assert_eq!(results[1]["success"], true);
    assert_eq!(results[1]["leaseReleased"], true);
    assert_eq!(consumer_row(&b, pid, QUEUE_MODE).await, (0, None));
    let pushed = b.pop_messages("/api/v1/pop/queue/t-dst").await;
    assert_eq!(payloads(&pushed), vec![json!("new")]);
    assert!(b.pop_messages("/api/v1/pop/queue/t-src").await.is_empty());
}

/// An ack under a lease that is not the partition's rolls back the bundle's pushes.
#[actix_rt::test]
async fn an_ack_under_a_wrong_lease_rolls_back_the_pushes_of_its_bundle() {
    // Arrange
    let b = TestBroker::start().await;
    let message = one_leased(&b, "wl-src").await;
    let mut ack = ack_op(&message, "completed");
    ack["leaseId"] = json!("not-the-lease");

    // Act
    let answer = bundle(
        &b,
        &json!({
            "operations": [push_op("wl-dst", &numbers(0..2)), ack],
            "requiredLeases": [],
        }),
    )
    .await;

    // Assert
    assert_rolled_back(&b, &answer, 2, "wl-dst").await;
    let pid = partition_id(&message);
    assert_eq!(
        consumer_row(&b, pid, QUEUE_MODE).await,
        (-1, message["leaseId"].as_str().map(str::to_owned)),
        "the real lease is untouched"
    );
}

/// An ack under an expired lease rolls back the bundle's pushes.
#[actix_rt::test]
async fn an_ack_under_an_expired_lease_rolls_back_the_pushes_of_its_bundle() {
    // Arrange
    let b = TestBroker::start().await;
    let message = one_leased(&b, "el-src").await;
    expire_leases(&b, partition_id(&message)).await;

    // Act
    let answer = bundle(
        &b,
        &json!({ "operations": [push_op("el-dst", &numbers(0..1)), ack_op(&message, "completed")] }),
    )
    .await;

    // Assert
    assert_rolled_back(&b, &answer, 1, "el-dst").await;
    assert!(
        answer["error"].as_str().unwrap().contains("lease"),
        "{answer}"
    );
}

/// An ack of an unknown transaction id rolls back the pushes before and after it.
#[actix_rt::test]
async fn an_ack_of_an_unknown_transaction_id_rolls_back_the_whole_bundle() {
    // Arrange
    let b = TestBroker::start().await;
    let message = one_leased(&b, "ut-src").await;
    let mut ack = ack_op(&message, "completed");
    ack["transactionId"] = json!("never-pushed");

    // Act
    let answer = bundle(
        &b,
        &json!({
            "operations": [
                push_op("ut-dst", &numbers(0..1)),
                ack,
                push_op("ut-dst", &numbers(1..2)),
            ],
            "requiredLeases": [message["leaseId"]],
        }),
    )
    .await;

    // Assert
    assert_rolled_back(&b, &answer, 1, "ut-dst").await;
    assert_eq!(answer["error"], "Message not found", "{answer}");
}

/// A required lease that has expired refuses the bundle, even though its own acks carry
/// a live lease: nothing is pushed and nothing acked.
#[actix_rt::test]
async fn a_required_lease_that_has_expired_fails_the_whole_bundle() {
    // Arrange
    let b = TestBroker::start().await;
    let live = one_leased(&b, "rl-live").await;
    let stale = one_leased(&b, "rl-stale").await;
    expire_leases(&b, partition_id(&stale)).await;

    // Act
    let answer = bundle(
        &b,
        &json!({
            "operations": [push_op("rl-dst", &numbers(0..1)), ack_op(&live, "completed")],
            "requiredLeases": [live["leaseId"], stale["leaseId"]],
        }),
    )
    .await;

    // Assert
    assert_eq!(answer["success"], false, "{answer}");
    assert!(
        answer["error"].as_str().unwrap().contains("lease"),
        "{answer}"
    );
    assert_eq!(segments_of(&b, "rl-dst").await, 0);
    assert_eq!(
        consumer_row(&b, partition_id(&live), QUEUE_MODE).await,
        (-1, live["leaseId"].as_str().map(str::to_owned)),
        "the live ack was rolled back"
    );
}

/// An ack without a lease of its own borrows the only required lease: it applies when
/// that lease holds the message, and is refused when the named lease is another one.
#[actix_rt::test]
async fn an_ack_without_a_lease_is_fenced_by_the_single_required_lease() {
    // Arrange
    let b = TestBroker::start().await;
    let mine = one_leased(&b, "bl-mine").await;
    let other = one_leased(&b, "bl-other").await;
    let mut bare = ack_op(&mine, "completed");
    bare.as_object_mut().unwrap().remove("leaseId");

    // Act
    let refused = bundle(
        &b,
        &json!({ "operations": [bare.clone()], "requiredLeases": [other["leaseId"]] }),
    )
    .await;
    let applied = bundle(
        &b,
        &json!({ "operations": [bare], "requiredLeases": [mine["leaseId"]] }),
    )
    .await;

    // Assert
    assert_eq!(refused["success"], false, "{refused}");
    assert_eq!(refused["failedIndex"], 0, "{refused}");
    assert_eq!(applied["success"], true, "{applied}");
    assert_eq!(
        consumer_row(&b, partition_id(&mine), QUEUE_MODE).await,
        (0, None)
    );
}

/// A failed ack inside a bundle rewinds the partition to the failed message and releases
/// the lease, exactly as `/api/v1/ack` does.
#[actix_rt::test]
async fn a_failed_ack_in_a_bundle_rewinds_like_the_ack_route() {
    // Arrange
    let b = TestBroker::start().await;
    b.push("nack", "Default", &numbers(0..3)).await;
    let batch = b.pop_messages("/api/v1/pop/queue/nack?batch=3").await;
    assert_eq!(batch.len(), 3);
    let pid = partition_id(&batch[0]);

    // Act
    let answer = bundle(
        &b,
        &json!({
            "operations": [ack_op(&batch[0], "completed"), ack_op(&batch[1], "failed")],
            "requiredLeases": [batch[0]["leaseId"]],
        }),
    )
    .await;

    // Assert
    assert_eq!(answer["success"], true, "{answer}");
    assert_eq!(answer["results"][1]["leaseReleased"], true, "{answer}");
    assert_eq!(consumer_row(&b, pid, QUEUE_MODE).await, (0, None));
    let again = b.pop_messages("/api/v1/pop/queue/nack?batch=3").await;
    assert_eq!(payloads(&again), numbers(1..3));
    assert_eq!(offsets(&again), vec![1, 2]);
}

/// A refused bundle ends its transaction before the connection goes back to the pool: with
/// a single pooled connection, the next push and pop work and no session idles in a
/// transaction.
#[actix_rt::test]
async fn a_refused_bundle_leaves_its_pooled_connection_outside_any_transaction() {
    // Arrange
    let b = TestBroker::start_with(&[("DB_POOL_SIZE", "1")]).await;
    let message = one_leased(&b, "pc-src").await;
    let mut ack = ack_op(&message, "completed");
    ack["transactionId"] = json!("never-pushed");

    // Act
    let refused = bundle(
        &b,
        &json!({ "operations": [push_op("pc-dst", &numbers(0..1)), ack] }),
    )
    .await;
    let idle_in_transaction = sql_count(
        &b,
        "SELECT count(*) FROM pg_stat_activity \
         WHERE application_name = 'queen' AND state LIKE 'idle in transaction%' \
         AND datname = current_database()",
    )
    .await;
    b.push("pc-dst", "Default", &numbers(5..6)).await;
    let popped = b.pop_messages("/api/v1/pop/queue/pc-dst").await;

    // Assert
    assert_eq!(refused["success"], false, "{refused}");
    assert_eq!(idle_in_transaction, 0);
    assert_eq!(payloads(&popped), numbers(5..6));
}

/// A committed bundle's push wakes a consumer parked on the target queue, as a plain push
/// does (the announcement comes after the commit, so the woken pop finds the message).
#[actix_rt::test]
async fn a_committed_bundle_wakes_a_consumer_parked_on_its_push() {
    // Arrange: a 5 s backoff, so only a wake can answer well before it.
    let b = TestBroker::start_with(&[
        ("POP_WAIT_INITIAL_INTERVAL_MS", "5000"),
        ("POP_WAIT_MAX_INTERVAL_MS", "5000"),
    ])
    .await;
    configure(&b, "tw-dst", json!({})).await;
    first_contact(&b, "tw-dst", QUEUE_MODE).await;
    let pop = spawn_get(
        &b,
        "/api/v1/pop/queue/tw-dst?autoAck=true&wait=true&timeout=10000",
    );
    wait_parked(&b, 1).await;

    // Act
    let sent = Instant::now();
    let answer = bundle(
        &b,
        &json!({ "operations": [push_op("tw-dst", &[json!("woken")])] }),
    )
    .await;
    let popped = pop.await.expect("pop task");

    // Assert
    assert_eq!(answer["success"], true, "{answer}");
    assert_eq!(payloads(&popped.messages()), vec![json!("woken")]);
    let waited = popped.at.saturating_duration_since(sent);
    assert!(
        waited < Duration::from_millis(2500),
        "the parked pop answered {waited:?} after the bundle: no wake"
    );
}
