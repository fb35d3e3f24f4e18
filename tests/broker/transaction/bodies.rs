//! Bundle bodies: dedup of repeated transaction ids like push, 400 for malformed bodies
//! with nothing changed, empty riders, and sealing on encrypted queues.

use reqwest::StatusCode;
use serde_json::{json, Value};

use super::{bundle, push_op, segments_of};
use crate::support::fixtures::{configure, numbers};
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

/// Empty `kv` and `timers` riders are ignored: the bundle commits as without them.
#[actix_rt::test]
async fn empty_riders_change_nothing_about_a_bundle() {
    // Arrange
    let b = TestBroker::start().await;
    let push = push_op("kv-dst", &numbers(0..1));

    // Act
    let empty_riders = bundle(&b, &json!({ "operations": [push], "kv": [], "timers": [] })).await;

    // Assert
    assert_eq!(empty_riders["success"], true, "{empty_riders}");
    assert_eq!(
        empty_riders["results"].as_array().map(Vec::len),
        Some(1),
        "{empty_riders}"
    );
    assert_eq!(segments_of(&b, "kv-dst").await, 1);
}

/// A bundle's push into an encrypted queue is sealed at rest like a plain push, and pops
/// return the payload as pushed.
#[actix_rt::test]
async fn a_bundle_push_into_an_encrypted_queue_stores_no_plaintext() {
    // Arrange
    let b = TestBroker::start_with(&[(
        "QUEEN_ENCRYPTION_KEY",
        "8f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f0",
    )])
    .await;
    configure(&b, "tx-vault", json!({ "encryptionEnabled": true })).await;
    let secret = json!({ "card": "4111-secret" });

    // Act
    let answer = bundle(
        &b,
        &json!({ "operations": [push_op("tx-vault", std::slice::from_ref(&secret))] }),
    )
    .await;

    // Assert
    assert_eq!(answer["success"], true, "{answer}");
    let rows = b
        .sql()
        .await
        .query(
            "SELECT s.blob FROM queen.log_segments s \
             JOIN queen.log_partitions p ON p.id = s.partition_id \
             JOIN queen.queues q ON q.id = p.queue_id WHERE q.name = 'tx-vault'",
            &[],
        )
        .await
        .unwrap();
    assert_eq!(rows.len(), 1);
    let stored = zstd::decode_all(rows[0].get::<_, Vec<u8>>(0).as_slice()).unwrap();
    assert!(
        !stored.windows(4).any(|w| w == b"4111"),
        "plaintext found in an encrypted queue's segment"
    );
    let popped = b.pop_messages("/api/v1/pop/queue/tx-vault").await;
    assert_eq!(payloads(&popped), vec![secret]);
}
