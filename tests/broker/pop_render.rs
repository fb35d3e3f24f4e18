//! A pop whose answer cannot be rendered (a payload sealed under another node's key, a
//! damaged segment) loses nothing and does not hold or redeliver forever: an auto-ack claim
//! is rolled back, a leased one is cut to what renders and the rest is given back at once,
//! and a damaged message is dead-lettered past the queue's retry limit.

use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::support::fixtures::{configure, consumer_row, numbers, offsets, partition_id};
use crate::support::{payloads, postgres, TestBroker};

const KEY: (&str, &str) = (
    "QUEEN_ENCRYPTION_KEY",
    "8f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f0",
);
const OTHER_KEY: (&str, &str) = (
    "QUEEN_ENCRYPTION_KEY",
    "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff",
);

fn secrets(n: i64) -> Vec<Value> {
    (0..n).map(|i| json!({ "pin": i })).collect()
}

/// An auto-ack pop on a node whose key cannot open the payloads answers an error and moves
/// no cursor: the node with the right key then delivers every message.
#[actix_rt::test]
async fn an_auto_ack_pop_that_cannot_open_the_payloads_loses_none_of_them() {
    // Arrange
    let pg = postgres::fresh_installed_database().await;
    let keyed = TestBroker::start_on(pg.clone(), &[KEY]).await;
    let stranger = TestBroker::start_on(pg, &[OTHER_KEY]).await;
    configure(&keyed, "render-auto", json!({ "encryptionEnabled": true })).await;
    keyed.push("render-auto", "Default", &secrets(3)).await;

    // Act
    let path = "/api/v1/pop/queue/render-auto?autoAck=true&batch=10";
    let (status, error) = stranger.get(path).await;
    let (group_status, _) = stranger
        .get("/api/v1/pop/queue/render-auto/partition/Default?autoAck=true&consumerGroup=g")
        .await;
    let delivered = keyed.pop_messages(path).await;
    let by_group = keyed
        .pop_messages("/api/v1/pop/queue/render-auto?autoAck=true&consumerGroup=g&batch=10")
        .await;

    // Assert
    assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR, "{error}");
    assert!(error["error"].is_string(), "{error}");
    assert_eq!(group_status, StatusCode::INTERNAL_SERVER_ERROR);
    assert_eq!(payloads(&delivered), secrets(3));
    assert_eq!(payloads(&by_group), secrets(3));
    keyed.stop().await;
    stranger.stop().await;
}

/// A leased pop on a node that cannot open part of a partition answers the messages before
/// it under a lease cut to them, and for the rest holds no lease: the node with the right
/// key delivers them at once, not after the lease time, and the wrong node never
/// dead-letters them however often it is asked.
#[actix_rt::test]
async fn a_leased_pop_that_cannot_open_a_payload_answers_what_it_can_and_holds_nothing_else() {
    // Arrange: offsets 0-1 plain (pushed before encryption), 2-3 sealed.
    let pg = postgres::fresh_installed_database().await;
    let keyed = TestBroker::start_on(pg.clone(), &[KEY]).await;
    let stranger = TestBroker::start_on(pg, &[OTHER_KEY]).await;
    configure(
        &keyed,
        "render-lease",
        json!({ "leaseTime": 3600, "retryLimit": 1 }),
    )
    .await;
    keyed.push("render-lease", "Default", &numbers(0..2)).await;
    configure(
        &keyed,
        "render-lease",
        json!({ "leaseTime": 3600, "retryLimit": 1, "encryptionEnabled": true }),
    )
    .await;
    keyed.push("render-lease", "Default", &secrets(2)).await;
    let path = "/api/v1/pop/queue/render-lease?batch=10";

    // Act
    let plain = stranger.pop_messages(path).await;
    let acked = stranger.ack_all(&plain, "completed", None).await;
    let mut refused = Vec::new();
    for _ in 0..3 {
        refused.push(stranger.get(path).await.0);
    }
    let pid = partition_id(&plain[0]);
    let row_after_refusals = consumer_row(&keyed, pid, "__QUEUE_MODE__").await;
    let sealed = keyed.pop_messages(path).await;

    // Assert
    assert_eq!(offsets(&plain), vec![0, 1], "{plain:?}");
    assert!(acked.iter().all(|a| a["success"] == true), "{acked:?}");
    assert!(
        refused
            .iter()
            .all(|s| *s == StatusCode::INTERNAL_SERVER_ERROR),
        "{refused:?}"
    );
    assert_eq!(row_after_refusals, (1, None), "no lease is left behind");
    assert_eq!(offsets(&sealed), vec![2, 3]);
    assert_eq!(payloads(&sealed), secrets(2));
    let (_, dlq) = keyed.get("/api/v1/dlq?queue=render-lease").await;
    assert_eq!(dlq["total"], 0, "{dlq}");
    keyed.stop().await;
    stranger.stop().await;
}

/// A damaged segment (its stored bytes overwritten through SQL) never blocks its partition:
/// a leased pop answers the messages before it, the damaged message is given back at each
/// pop that reaches it and dead-lettered, with the reason, once its deliveries pass the
/// retry limit, and the messages after it are delivered; an auto-ack pop meanwhile moves
/// nothing.
#[actix_rt::test]
async fn a_damaged_segment_is_dead_lettered_past_the_retry_limit_and_the_rest_flows() {
    // Arrange: one segment per offset; offset 1's bytes are not a segment.
    let b = TestBroker::start().await;
    configure(
        &b,
        "render-damaged",
        json!({ "leaseTime": 3600, "retryLimit": 1 }),
    )
    .await;
    for n in 0..3 {
        b.push("render-damaged", "Default", &numbers(n..n + 1))
            .await;
    }
    b.sql()
        .await
        .execute(
            "UPDATE queen.log_segments SET blob = '\\x00010203'::bytea WHERE base_offset = 1",
            &[],
        )
        .await
        .unwrap();
    let path = "/api/v1/pop/queue/render-damaged?batch=10";

    // Act
    let (auto_status, _) = b
        .get("/api/v1/pop/queue/render-damaged?autoAck=true&consumerGroup=auto&batch=10")
        .await;
    let (auto_again, _) = b
        .get("/api/v1/pop/queue/render-damaged?autoAck=true&consumerGroup=auto&batch=10")
        .await;
    let first = b.pop_messages(path).await;
    let acked = b.ack_all(&first, "completed", None).await;
    let mut refused = Vec::new();
    for _ in 0..2 {
        refused.push(b.get(path).await.0);
    }
    let rest = b.pop_messages(path).await;
    let rest_acked = b.ack_all(&rest, "completed", None).await;
    let (_, dlq) = b.get("/api/v1/dlq?queue=render-damaged").await;

    // Assert
    assert_eq!(auto_status, StatusCode::INTERNAL_SERVER_ERROR);
    assert_eq!(
        auto_again,
        StatusCode::INTERNAL_SERVER_ERROR,
        "nothing skipped"
    );
    assert_eq!(offsets(&first), vec![0], "{first:?}");
    assert!(acked.iter().all(|a| a["success"] == true), "{acked:?}");
    assert_eq!(
        refused,
        vec![StatusCode::INTERNAL_SERVER_ERROR; 2],
        "given back once, then dead-lettered"
    );
    assert_eq!(offsets(&rest), vec![2], "{rest:?}");
    assert!(rest_acked.iter().all(|a| a["success"] == true));
    assert_eq!(dlq["total"], 1, "{dlq}");
    let letter = &dlq["messages"][0];
    assert_eq!(letter["offset"], 1, "{letter}");
    assert_eq!(letter["data"], Value::Null, "{letter}");
    assert!(
        letter["errorMessage"]
            .as_str()
            .unwrap()
            .contains("damaged segment"),
        "{letter}"
    );
    assert!(letter["unreadable"].is_string(), "{letter}");
    let pid = partition_id(&first[0]);
    assert_eq!(consumer_row(&b, pid, "__QUEUE_MODE__").await, (2, None));
    let auto_cursor = b
        .sql()
        .await
        .query_one(
            "SELECT coalesce(max(committed), -1) FROM queen.log_consumers \
             WHERE consumer_group = 'auto'",
            &[],
        )
        .await
        .unwrap()
        .get::<_, i64>(0);
    assert_eq!(auto_cursor, -1, "the auto-ack group moved past nothing");
}

/// With `dlqAfterMaxRetries: false`, a damaged message whose deliveries are spent is
/// skipped without a dead letter, and the messages after it flow as before.
#[actix_rt::test]
async fn a_spent_damaged_message_is_skipped_without_a_dead_letter_when_retries_file_none() {
    // Arrange: as above, on a queue that files no dead letters for spent retries.
    let b = TestBroker::start().await;
    configure(
        &b,
        "render-skip",
        json!({ "leaseTime": 3600, "retryLimit": 1, "dlqAfterMaxRetries": false }),
    )
    .await;
    for n in 0..3 {
        b.push("render-skip", "Default", &numbers(n..n + 1)).await;
    }
    b.sql()
        .await
        .execute(
            "UPDATE queen.log_segments SET blob = '\\x00010203'::bytea WHERE base_offset = 1",
            &[],
        )
        .await
        .unwrap();
    let path = "/api/v1/pop/queue/render-skip?batch=10";
    let first = b.pop_messages(path).await;
    b.ack_all(&first, "completed", None).await;

    // Act
    let mut refused = Vec::new();
    for _ in 0..2 {
        refused.push(b.get(path).await.0);
    }
    let rest = b.pop_messages(path).await;

    // Assert
    assert_eq!(refused, vec![StatusCode::INTERNAL_SERVER_ERROR; 2]);
    assert_eq!(offsets(&rest), vec![2], "{rest:?}");
    let (_, dlq) = b.get("/api/v1/dlq?queue=render-skip").await;
    assert_eq!(dlq["total"], 0, "{dlq}");
}
