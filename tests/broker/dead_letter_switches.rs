//! `deadLetterQueue` and `dlqAfterMaxRetries`: not set, dead letters are kept as they always
//! were; `dlqAfterMaxRetries: false` skips messages whose retries are spent instead of
//! filing them; `deadLetterQueue: false` keeps no dead letters at all.

use reqwest::StatusCode;
use serde_json::json;

use crate::support::fixtures::{configure, entry, numbers, offsets, sql_count};
use crate::support::{payloads, TestBroker};

/// A configure that sets none of the delivery options echoes them as what they do:
/// nothing expires, no retry delay, dead letters kept.
#[actix_rt::test]
async fn options_never_set_are_echoed_as_their_behaviour() {
    // Arrange
    let b = TestBroker::start().await;

    // Act
    let (status, answer) = b
        .post(
            "/api/v1/configure",
            &json!({ "queue": "plain", "namespace": null, "task": null,
                     "options": { "leaseTime": 300, "retryLimit": 3 } }),
        )
        .await;

    // Assert
    assert_eq!(status, StatusCode::OK, "{answer}");
    let o = &answer["options"];
    assert_eq!(o["ttl"], 0, "{o}");
    assert_eq!(o["maxWaitTimeSeconds"], 0, "{o}");
    assert_eq!(o["retryDelay"], 0, "{o}");
    assert_eq!(o["deadLetterQueue"], true, "{o}");
    assert_eq!(o["dlqAfterMaxRetries"], true, "{o}");
}

/// With `dlqAfterMaxRetries: false`, a failed ack past the retry limit moves the
/// partition past the message without filing it; the answer says no dead letter.
#[actix_rt::test]
async fn with_dlq_after_max_retries_off_a_spent_message_is_skipped_not_filed() {
    // Arrange
    let b = TestBroker::start().await;
    configure(
        &b,
        "no-retry-dlq",
        json!({ "retryLimit": 0, "dlqAfterMaxRetries": false }),
    )
    .await;
    b.push("no-retry-dlq", "Default", &numbers(0..3)).await;
    let first = b.pop_messages("/api/v1/pop/queue/no-retry-dlq").await;

    // Act
    let (_, nack) = b
        .post("/api/v1/ack", &entry(&first[0], "failed", Some("boom")))
        .await;
    let next = b.pop_messages("/api/v1/pop/queue/no-retry-dlq").await;

    // Assert
    assert_eq!(nack[0]["success"], true, "{nack}");
    assert_eq!(nack[0]["dlq"], false, "{nack}");
    assert_eq!(payloads(&next), numbers(1..3));
    assert_eq!(offsets(&next), vec![1, 2]);
    assert_eq!(
        sql_count(&b, "SELECT count(*) FROM queen.dead_letters").await,
        0
    );
}

/// With `dlqAfterMaxRetries: false` a `dlq` ack still files the message: only spent
/// retries are skipped.
#[actix_rt::test]
async fn with_dlq_after_max_retries_off_a_dlq_ack_still_files_the_message() {
    // Arrange
    let b = TestBroker::start().await;
    configure(&b, "dlq-ack-on", json!({ "dlqAfterMaxRetries": false })).await;
    b.push("dlq-ack-on", "Default", &numbers(0..1)).await;
    let first = b.pop_messages("/api/v1/pop/queue/dlq-ack-on").await;

    // Act
    let (_, answer) = b
        .post("/api/v1/ack", &entry(&first[0], "dlq", Some("poison")))
        .await;

    // Assert
    assert_eq!(answer[0]["dlq"], true, "{answer}");
    assert_eq!(
        sql_count(&b, "SELECT count(*) FROM queen.dead_letters").await,
        1
    );
}

/// With `deadLetterQueue: false`, a `dlq` ack and a failed ack past the limit both move
/// past their message and file nothing.
#[actix_rt::test]
async fn with_dead_letter_queue_off_nothing_is_ever_filed() {
    // Arrange
    let b = TestBroker::start().await;
    configure(
        &b,
        "no-dlq",
        json!({ "retryLimit": 0, "deadLetterQueue": false }),
    )
    .await;
    b.push("no-dlq", "Default", &numbers(0..3)).await;
    let first = b.pop_messages("/api/v1/pop/queue/no-dlq").await;

    // Act
    let (_, answer) = b
        .post(
            "/api/v1/ack/batch",
            &json!({ "acknowledgments": [
                entry(&first[0], "dlq", Some("poison")),
                entry(&first[1], "failed", Some("boom")),
            ], "consumerGroup": null }),
        )
        .await;
    let next = b.pop_messages("/api/v1/pop/queue/no-dlq").await;

    // Assert
    assert_eq!(answer[0]["success"], true, "{answer}");
    assert_eq!(answer[0]["dlq"], false, "{answer}");
    assert_eq!(answer[1]["success"], true, "{answer}");
    assert_eq!(answer[1]["dlq"], false, "{answer}");
    assert_eq!(payloads(&next), numbers(2..3));
    assert_eq!(
        sql_count(&b, "SELECT count(*) FROM queen.dead_letters").await,
        0
    );
}
