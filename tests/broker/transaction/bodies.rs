//! Bundle bodies: dedup of repeated transaction ids like push, 400 for malformed bodies
//! with nothing changed, and the refused `kv`/`timers` riders.

use reqwest::StatusCode;
use serde_json::{json, Value};

use super::{bundle, push_op, segments_of};
use crate::support::fixtures::numbers;
use crate::support::{payloads, TestBroker};

/// Transaction ids repeated in a bundle, or already stored, answer `duplicate` with the
/// stored message's id, and only one message is stored.
#[actix_rt::test]
async fn repeated_transaction_ids_answer_duplicate_like_push_does() {
    // Arrange
    let item = json!({ "queue": "dup", "payload": "once", "transactionId": "t-1" });
    let b = TestBroker::start().await;

    // Act
    let first = bundle(
        &b,
        &json!({ "operations": [
            { "type": "push", "items": [item, item] },
            { "type": "push", "items": [item] },
        ] }),
    )
    .await;
    let again = bundle(
        &b,
        &json!({ "operations": [{ "type": "push", "items": [item] }] }),
    )
    .await;

    // Assert
    assert_eq!(first["success"], true, "{first}");
    let statuses: Vec<&Value> = first["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| &r["status"])
        .collect();
    assert_eq!(
        statuses,
        vec!["queued", "duplicate", "duplicate"],
        "{first}"
    );
    assert_eq!(again["success"], true, "{again}");
    assert_eq!(again["results"][0]["status"], "duplicate", "{again}");
    let id = &first["results"][0]["messageId"];
    assert_eq!(&first["results"][1]["messageId"], id);
    assert_eq!(&first["results"][2]["messageId"], id);
    assert_eq!(&again["results"][0]["messageId"], id);
    let popped = b.pop_messages("/api/v1/pop/queue/dup?batch=10").await;
    assert_eq!(payloads(&popped), vec![json!("once")]);
}

/// Malformed bodies answer 400 with a JSON error and change nothing, even when some of
/// their operations are valid.
#[actix_rt::test]
async fn malformed_bundles_answer_400_and_change_nothing() {
    // Arrange
    let b = TestBroker::start().await;
    let good = push_op("bad-dst", &numbers(0..1));
    let ack = json!({ "type": "ack", "transactionId": "t", "partitionId": "1" });
    let bodies = [
        json!({}),
        json!({ "operations": {} }),
        json!({ "operations": null }),
        json!([good]),
        json!({ "operations": [good, { "type": "nope" }] }),
        json!({ "operations": [good, { "items": [] }] }),
        json!({ "operations": [good, 7] }),
        json!({ "operations": [{ "type": "push" }] }),
        json!({ "operations": [{ "type": "push", "items": {} }] }),
        json!({ "operations": [{ "type": "push", "items": [{ "queue": 5, "payload": 1 }] }] }),
        json!({ "operations": [{ "type": "push", "items": [{ "queue": "a/b", "payload": 1 }] }] }),
        json!({ "operations": [good, { "type": "ack", "transactionId": "t" }] }),
        json!({ "operations": [good, { "type": "ack", "partitionId": "1" }] }),
        json!({ "operations": [good, { "type": "ack", "transactionId": "t", "partitionId": "x" }] }),
        json!({ "operations": [good, { "type": "ack", "transactionId": 5, "partitionId": "1" }] }),
        json!({ "operations": [good, { "type": "ack", "transactionId": "t", "partitionId": "1", "consumerGroup": 3 }] }),
        json!({ "operations": [good, ack], "requiredLeases": "lease" }),
        json!({ "operations": [good, ack], "requiredLeases": [1] }),
        json!({ "operations": [good], "kv": "x" }),
    ];

    for body in &bodies {
        // Act
        let (status, answer) = b.post("/api/v1/transaction", body).await;

        // Assert
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body} -> {answer}");
        assert!(answer["error"].is_string(), "{body} -> {answer}");
    }
    let (status, _) = b
        .post_raw(
            "/api/v1/transaction",
            "application/json",
            b"{not json".to_vec(),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(segments_of(&b, "bad-dst").await, 0);
}

/// A bundle with `kv` or `timers` riders is refused whole with 200 and changes nothing;
/// empty riders are ignored.
#[actix_rt::test]
async fn kv_and_timer_riders_are_refused_without_changing_anything() {
    // Arrange
    let b = TestBroker::start().await;
    let push = push_op("kv-dst", &numbers(0..1));

    // Act
    let with_kv = bundle(
        &b,
        &json!({ "operations": [push], "kv": [{ "op": "set", "key": "k" }] }),
    )
    .await;
    let with_timers = bundle(
        &b,
        &json!({ "operations": [push], "timers": [{ "op": "cancel" }] }),
    )
    .await;
    let empty_riders = bundle(&b, &json!({ "operations": [push], "kv": [], "timers": [] })).await;

    // Assert
    for refused in [&with_kv, &with_timers] {
        assert_eq!(refused["success"], false, "{refused}");
        assert_eq!(
            refused["error"], "kv and timers are not supported by this broker",
            "{refused}"
        );
    }
    assert_eq!(empty_riders["success"], true, "{empty_riders}");
    assert_eq!(segments_of(&b, "kv-dst").await, 1);
}
