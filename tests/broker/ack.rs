//! Ack over HTTP: cursor advance and lease release, nack rewind, the retry limit and the
//! dead-letter table, lease fencing, and acks on another node.

use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::support::fixtures::{
    configure, consumer_row, entry, numbers, offsets, partition_id, sql_count,
};
use crate::support::{eventually, payloads, TestBroker};

/// Acking a whole batch advances the cursor to its end and releases the lease at once.
#[actix_rt::test]
async fn acking_a_whole_batch_advances_the_cursor_to_its_end_and_releases_the_lease() {
    // Arrange
    let b = TestBroker::start().await;
    b.push("whole", "Default", &numbers(0..6)).await;
    let batch = b.pop_messages("/api/v1/pop/queue/whole?batch=3").await;
    assert_eq!(payloads(&batch), numbers(0..3));
    let pid = partition_id(&batch[0]);

    // Act
    let answers = b.ack_all(&batch, "completed", None).await;

    // Assert
    assert_eq!(answers.len(), 3);
    for a in &answers {
        assert_eq!(a["success"], true, "{a}");
        assert_eq!(a["error"], Value::Null, "{a}");
        assert_eq!(a["leaseReleased"], true, "{a}");
    }
    assert_eq!(consumer_row(&b, pid, "__QUEUE_MODE__").await, (2, None));
    let next = b.pop_messages("/api/v1/pop/queue/whole?batch=3").await;
    assert_eq!(payloads(&next), numbers(3..6));
    assert_eq!(offsets(&next), vec![3, 4, 5]);
}

/// A failed ack rewinds the partition to the failed message, which comes back with the rest.
#[actix_rt::test]
async fn a_failed_ack_rewinds_the_partition_to_the_failed_message() {
    // Arrange
    let b = TestBroker::start().await;
    b.push("rewind", "Default", &numbers(0..5)).await;
    let batch = b.pop_messages("/api/v1/pop/queue/rewind?batch=5").await;
    assert_eq!(payloads(&batch), numbers(0..5));
    let pid = partition_id(&batch[0]);
    let done = b.ack_all(&batch[..2], "completed", None).await;
    assert!(done.iter().all(|a| a["success"] == true), "{done:?}");
    assert_eq!(
        consumer_row(&b, pid, "__QUEUE_MODE__").await,
        (1, batch[0]["leaseId"].as_str().map(str::to_owned)),
        "a partial ack moves the cursor and keeps the lease"
    );

    // Act
    let (status, nack) = b
        .post(
            "/api/v1/ack",
            &entry(&batch[2], "failed", Some("handler broke")),
        )
        .await;

    // Assert
    assert_eq!(status, StatusCode::OK, "{nack}");
    assert_eq!(nack[0]["success"], true, "{nack}");
    assert_eq!(nack[0]["leaseReleased"], true, "{nack}");
    assert_eq!(consumer_row(&b, pid, "__QUEUE_MODE__").await, (1, None));
    let again = b.pop_messages("/api/v1/pop/queue/rewind?batch=5").await;
    assert_eq!(payloads(&again), numbers(2..5));
    assert_eq!(offsets(&again), vec![2, 3, 4]);
}

/// Past the retry limit a failed message is dead-lettered and the next pop skips it.
#[actix_rt::test]
async fn a_message_failed_past_the_retry_limit_is_dead_lettered_and_skipped() {
    // Arrange
    let b = TestBroker::start().await;
    configure(&b, "retry-q", json!({ "retryLimit": 1 })).await;
    b.push("retry-q", "Default", &numbers(0..3)).await;
    let first = b.pop_messages("/api/v1/pop/queue/retry-q").await;
    let (_, nack) = b
        .post("/api/v1/ack", &entry(&first[0], "failed", Some("boom 1")))
        .await;
    assert_eq!(nack[0]["success"], true, "{nack}");
    assert_eq!(nack[0]["dlq"], false, "within the retry limit: {nack}");
    assert_eq!(
        sql_count(&b, "SELECT count(*) FROM queen.dead_letters").await,
        0
    );
    let second = b.pop_messages("/api/v1/pop/queue/retry-q").await;
    assert_eq!(payloads(&second), numbers(0..3));
    assert!(
        second.iter().all(|m| m["deliveryAttempt"] == 2),
        "{second:?}"
    );

    // Act
    let (status, nack) = b
        .post("/api/v1/ack", &entry(&second[0], "failed", Some("boom 2")))
        .await;

    // Assert
    assert_eq!(status, StatusCode::OK, "{nack}");
    assert_eq!(nack[0]["success"], true, "{nack}");
    assert_eq!(nack[0]["dlq"], true, "{nack}");
    let rows = b
        .sql()
        .await
        .query(
            "SELECT message_offset, transaction_id, error_message, consumer_group \
             FROM queen.dead_letters",
            &[],
        )
        .await
        .unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].get::<_, i64>(0), 0);
    assert_eq!(
        rows[0].get::<_, String>(1),
        second[0]["transactionId"].as_str().unwrap()
    );
    assert_eq!(
        rows[0].get::<_, Option<String>>(2).as_deref(),
        Some("boom 2")
    );
    assert_eq!(rows[0].get::<_, String>(3), "__QUEUE_MODE__");
    let next = b.pop_messages("/api/v1/pop/queue/retry-q").await;
    assert_eq!(
        payloads(&next),
        numbers(1..3),
        "the next pop must start right after the dead-lettered message"
    );
    assert_eq!(offsets(&next), vec![1, 2]);
}

/// The dlq status files the message in the dead-letter table at once and moves past it.
#[actix_rt::test]
async fn an_ack_with_status_dlq_files_the_message_at_once() {
    // Arrange
    let b = TestBroker::start().await;
    b.push("dlq-now", "Default", &numbers(0..3)).await;
    let batch = b.pop_messages("/api/v1/pop/queue/dlq-now").await;
    let pid = partition_id(&batch[0]);
    let acks = vec![
        entry(&batch[0], "completed", None),
        entry(&batch[1], "dlq", Some("poison")),
        entry(&batch[2], "completed", None),
    ];

    // Act
    let (status, answers) = b
        .post(
            "/api/v1/ack/batch",
            &json!({ "acknowledgments": acks, "consumerGroup": null }),
        )
        .await;

    // Assert
    assert_eq!(status, StatusCode::OK, "{answers}");
    let dlq: Vec<&Value> = answers
        .as_array()
        .unwrap()
        .iter()
        .map(|a| &a["dlq"])
        .collect();
    assert_eq!(dlq, vec![false, true, false]);
    assert!(answers
        .as_array()
        .unwrap()
        .iter()
        .all(|a| a["success"] == true));
    let row = b
        .sql()
        .await
        .query_one(
            "SELECT message_offset, transaction_id, error_message FROM queen.dead_letters",
            &[],
        )
        .await
        .unwrap();
    assert_eq!(row.get::<_, i64>(0), 1);
    assert_eq!(
        row.get::<_, String>(1),
        batch[1]["transactionId"].as_str().unwrap()
    );
    assert_eq!(row.get::<_, Option<String>>(2).as_deref(), Some("poison"));
    assert_eq!(consumer_row(&b, pid, "__QUEUE_MODE__").await, (2, None));
    assert!(b.pop_messages("/api/v1/pop/queue/dlq-now").await.is_empty());
}

/// An ack under a lease that is not the partition's live one is refused per item with HTTP 200.
#[actix_rt::test]
async fn an_ack_under_a_foreign_lease_is_refused_per_item_with_http_200() {
    // Arrange: two partitions, each leased by its own pop.
    let b = TestBroker::start().await;
    b.push("foreign", "A", &[json!("a0"), json!("a1")]).await;
    b.push("foreign", "B", &[json!("b0")]).await;
    let a = b
        .pop_messages("/api/v1/pop/queue/foreign/partition/A")
        .await;
    let bb = b
        .pop_messages("/api/v1/pop/queue/foreign/partition/B")
        .await;
    let (pid_a, pid_b) = (partition_id(&a[0]), partition_id(&bb[0]));
    let lease_b = bb[0]["leaseId"].as_str().unwrap().to_owned();
    let mut b0_under_a = entry(&bb[0], "completed", None);
    b0_under_a["leaseId"] = a[0]["leaseId"].clone();
    let acks = vec![
        entry(&a[0], "completed", None),
        entry(&a[1], "completed", None),
        b0_under_a,
    ];

    // Act
    let (status, answers) = b
        .post(
            "/api/v1/ack/batch",
            &json!({ "acknowledgments": acks, "consumerGroup": null }),
        )
        .await;

    // Assert
    assert_eq!(status, StatusCode::OK, "{answers}");
    let answers = answers.as_array().unwrap();
    let success: Vec<&Value> = answers.iter().map(|a| &a["success"]).collect();
    assert_eq!(success, vec![true, true, false]);
    assert!(
        answers[2]["error"].as_str().is_some_and(|e| !e.is_empty()),
        "{:?}",
        answers[2]
    );
    assert_eq!(consumer_row(&b, pid_a, "__QUEUE_MODE__").await, (1, None));
    assert_eq!(
        consumer_row(&b, pid_b, "__QUEUE_MODE__").await,
        (-1, Some(lease_b)),
        "a refused ack changes nothing"
    );
}

/// An ack under an expired lease is refused with HTTP 200, also after another pop re-leased it.
#[actix_rt::test]
async fn an_ack_under_an_expired_lease_is_refused_with_http_200() {
    // Arrange
    let b = TestBroker::start().await;
    b.push("expired", "Default", &[json!("m0"), json!("m1")])
        .await;
    let stale = b
        .pop_messages("/api/v1/pop/queue/expired?leaseSeconds=1")
        .await;
    let pid = partition_id(&stale[0]);
    let sql = b.sql().await;
    eventually(Duration::from_secs(5), || async {
        let expired: bool = sql
            .query_one(
                "SELECT lease_expires_at < now() FROM queen.log_consumers \
                 WHERE partition_id = $1",
                &[&pid],
            )
            .await
            .unwrap()
            .get(0);
        expired.then_some(())
    })
    .await
    .expect("the lease expires");

    // Act
    let after_expiry = b.ack_all(&stale, "completed", None).await;
    let fresh = b.pop_messages("/api/v1/pop/queue/expired").await;
    let after_release = b.ack_all(&stale, "completed", None).await;
    let current = b.ack_all(&fresh, "completed", None).await;

    // Assert
    for a in after_expiry.iter().chain(&after_release) {
        assert_eq!(a["success"], false, "{a}");
        assert!(a["error"].as_str().is_some_and(|e| !e.is_empty()), "{a}");
    }
    assert_eq!(payloads(&fresh), vec![json!("m0"), json!("m1")]);
    assert!(fresh.iter().all(|m| m["deliveryAttempt"] == 2), "{fresh:?}");
    assert!(current.iter().all(|a| a["success"] == true), "{current:?}");
    assert_eq!(consumer_row(&b, pid, "__QUEUE_MODE__").await, (1, None));
}

/// Acks sent to a second broker on the same database are applied.
#[actix_rt::test]
async fn acks_sent_to_a_second_broker_on_the_same_database_are_applied() {
    // Arrange
    let first = TestBroker::start().await;
    let second = TestBroker::start_on(first.pg.clone(), &[]).await;
    first.push("two-nodes", "Default", &numbers(0..4)).await;
    let batch = first
        .pop_messages("/api/v1/pop/queue/two-nodes?batch=2")
        .await;
    assert_eq!(payloads(&batch), numbers(0..2));

    // Act
    let answers = second.ack_all(&batch, "completed", None).await;

    // Assert
    for a in &answers {
        assert_eq!(a["success"], true, "{a}");
        assert_eq!(a["leaseReleased"], true, "{a}");
    }
    let pid = partition_id(&batch[0]);
    assert_eq!(consumer_row(&first, pid, "__QUEUE_MODE__").await, (1, None));
    let next = first
        .pop_messages("/api/v1/pop/queue/two-nodes?batch=2")
        .await;
    assert_eq!(payloads(&next), numbers(2..4));
    second.stop().await;
}
