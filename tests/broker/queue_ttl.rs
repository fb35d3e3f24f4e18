//! `ttl` and `maxWaitTimeSeconds`: a message older than either is never delivered; the
//! claim dead-letters it (the queue keeps dead letters) or skips it (`deadLetterQueue:
//! false`), whole segments at a time, and delivers what follows.

use std::time::Duration;

use serde_json::{json, Value};

use crate::support::fixtures::{configure, offsets, sql_count};
use crate::support::{eventually, payloads, TestBroker};

/// Waits out a time limit of the queue under test (the condition is time itself).
async fn let_time_pass(d: Duration) {
    tokio::time::sleep(d).await;
}

/// The dead letters of a queue as `GET /api/v1/dlq` lists them.
async fn dead_letters(b: &TestBroker, queue: &str) -> Vec<Value> {
    let (status, body) = b
        .get(&format!("/api/v1/dlq?queue={queue}&limit=100&offset=0"))
        .await;
    assert!(status.is_success(), "{body}");
    body["messages"].as_array().expect("messages").clone()
}

/// Segments pushed longer ago than the ttl are dead-lettered by the claim, and the pop
/// delivers the younger segment behind them.
#[actix_rt::test]
async fn messages_older_than_the_ttl_are_dead_lettered_and_the_younger_ones_delivered() {
    // Arrange
    let b = TestBroker::start().await;
    configure(&b, "ttl-q", json!({ "ttl": 2 })).await;
    b.push("ttl-q", "Default", &[json!("old-0"), json!("old-1")])
        .await;
    let_time_pass(Duration::from_millis(2_300)).await;
    b.push("ttl-q", "Default", &[json!("young")]).await;

    // Act
    let got = b.pop_messages("/api/v1/pop/queue/ttl-q?batch=10").await;

    // Assert
    assert_eq!(payloads(&got), vec![json!("young")]);
    assert_eq!(offsets(&got), vec![2]);
    let letters = dead_letters(&b, "ttl-q").await;
    let mut filed: Vec<(Value, Value, Value)> = letters
        .iter()
        .map(|d| {
            (
                d["data"].clone(),
                d["transactionId"].clone(),
                d["errorMessage"].clone(),
            )
        })
        .collect();
    filed.sort_by_key(|f| f.1.to_string());
    assert_eq!(
        filed,
        vec![
            (json!("old-0"), json!("expired:0"), json!("expired")),
            (json!("old-1"), json!("expired:1"), json!("expired")),
        ]
    );
    let acked = b.ack_all(&got, "completed", None).await;
    assert_eq!(acked[0]["success"], true, "{acked:?}");
    assert!(b.pop_messages("/api/v1/pop/queue/ttl-q").await.is_empty());
}

/// Within the ttl the message is delivered as usual; with `deadLetterQueue: false` an
/// expired one is skipped without a dead letter, for every consumer group on its own.
#[actix_rt::test]
async fn with_dead_letters_off_expired_messages_are_skipped_for_every_group() {
    // Arrange
    let b = TestBroker::start().await;
    configure(
        &b,
        "ttl-skip",
        json!({ "ttl": 2, "deadLetterQueue": false }),
    )
    .await;
    b.push("ttl-skip", "Default", &[json!("fresh")]).await;
    let fresh = b
        .pop_messages("/api/v1/pop/queue/ttl-skip?consumerGroup=early")
        .await;
    assert_eq!(payloads(&fresh), vec![json!("fresh")], "within the ttl");
    b.ack_all(&fresh, "completed", Some("early")).await;
    b.push("ttl-skip", "Default", &[json!("stale")]).await;
    let_time_pass(Duration::from_millis(2_300)).await;
    b.push("ttl-skip", "Default", &[json!("later")]).await;

    // Act
    let early = b
        .pop_messages("/api/v1/pop/queue/ttl-skip?consumerGroup=early&batch=10")
        .await;
    let late = b
        .pop_messages("/api/v1/pop/queue/ttl-skip?consumerGroup=late&batch=10")
        .await;

    // Assert
    assert_eq!(payloads(&early), vec![json!("later")]);
    assert_eq!(
        payloads(&late),
        vec![json!("later")],
        "a new group sees neither expired message"
    );
    assert_eq!(
        sql_count(&b, "SELECT count(*) FROM queen.dead_letters").await,
        0
    );
}

/// maxWaitTimeSeconds counts from when a message becomes visible (push +
/// delayedProcessing), not from the push: one pushed longer ago than the limit but visible
/// for less is still delivered; one visible for longer is dead-lettered.
#[actix_rt::test]
async fn max_wait_time_counts_from_visibility_and_expires_what_waited_longer() {
    // Arrange: visible 1 s after its push, deliverable until 3 s after it.
    let b = TestBroker::start().await;
    configure(
        &b,
        "maxwait",
        json!({ "delayedProcessing": 1, "maxWaitTimeSeconds": 2 }),
    )
    .await;
    b.push("maxwait", "a", &[json!("a0")]).await;
    b.push("maxwait", "b", &[json!("b0")]).await;

    // Act: a partition popped 1.5 s after its push, the other only after 3 s.
    let_time_pass(Duration::from_millis(1_500)).await;
    let in_time = b
        .pop_messages("/api/v1/pop/queue/maxwait/partition/a")
        .await;
    let_time_pass(Duration::from_millis(1_800)).await;
    let too_late = b
        .pop_messages("/api/v1/pop/queue/maxwait/partition/b")
        .await;

    // Assert
    assert_eq!(
        payloads(&in_time),
        vec![json!("a0")],
        "waited 0.5 s since visible"
    );
    assert!(too_late.is_empty(), "waited past the limit: {too_late:?}");
    let letters = dead_letters(&b, "maxwait").await;
    assert_eq!(letters.len(), 1, "{letters:?}");
    assert_eq!(letters[0]["data"], "b0");
    assert_eq!(letters[0]["partition"], "b");
}

/// A backlog of many expired segments is passed over by successive claims until the
/// live message behind it is delivered; nothing expired is delivered on the way.
#[actix_rt::test]
async fn a_long_expired_backlog_is_passed_segment_by_segment() {
    // Arrange: 30 segments, expired, then one live message.
    let b = TestBroker::start().await;
    configure(&b, "ttl-backlog", json!({ "ttl": 2 })).await;
    for i in 0..30 {
        b.push("ttl-backlog", "Default", &[json!(i)]).await;
    }
    let_time_pass(Duration::from_millis(2_300)).await;
    b.push("ttl-backlog", "Default", &[json!("live")]).await;

    // Act
    let got = eventually(Duration::from_secs(5), || async {
        let m = b
            .pop_messages("/api/v1/pop/queue/ttl-backlog?batch=100")
            .await;
        (!m.is_empty()).then_some(m)
    })
    .await
    .expect("the live message is delivered");

    // Assert
    assert_eq!(payloads(&got), vec![json!("live")]);
    assert_eq!(
        sql_count(
            &b,
            "SELECT count(*) FROM queen.dead_letters WHERE transaction_id LIKE 'expired:%'"
        )
        .await,
        30
    );
}

/// An expired message's dead letter is retried by the name the listing shows: the copy is
/// appended to the partition and delivered.
#[actix_rt::test]
async fn an_expired_dead_letter_is_retried_by_its_listed_transaction_id() {
    // Arrange
    let b = TestBroker::start().await;
    configure(&b, "ttl-retry", json!({ "ttl": 2 })).await;
    b.push("ttl-retry", "Default", &[json!("late")]).await;
    let_time_pass(Duration::from_millis(2_300)).await;
    assert!(b
        .pop_messages("/api/v1/pop/queue/ttl-retry")
        .await
        .is_empty());
    let letters = dead_letters(&b, "ttl-retry").await;
    assert_eq!(letters.len(), 1, "{letters:?}");
    let pid = letters[0]["partitionId"].as_str().expect("partitionId");
    let txn = letters[0]["transactionId"].as_str().expect("transactionId");

    // Act
    let (status, body) = b
        .post(&format!("/api/v1/messages/{pid}/{txn}/retry"), &json!({}))
        .await;
    let again = b.pop_messages("/api/v1/pop/queue/ttl-retry").await;

    // Assert
    assert!(status.is_success(), "{status}: {body}");
    assert_eq!(payloads(&again), vec![json!("late")]);
    assert!(dead_letters(&b, "ttl-retry").await.is_empty());
}

/// The cursor of queue mode in a partition.
async fn committed(b: &TestBroker, pid: i64) -> i64 {
    crate::support::fixtures::consumer_row(b, pid, "__QUEUE_MODE__")
        .await
        .0
}

/// One claim expires at most 10,000 messages: a longer expired backlog takes more than one
/// pop, each moving the cursor on, and the live message behind it comes after.
#[actix_rt::test]
async fn one_claim_expires_at_most_ten_thousand_messages_and_the_next_goes_on() {
    // Arrange: 21 expired segments of 500 (skipped: no dead letters), then a live one.
    let b = TestBroker::start().await;
    configure(
        &b,
        "ttl-bound",
        json!({ "ttl": 2, "deadLetterQueue": false }),
    )
    .await;
    let first = b
        .push(
            "ttl-bound",
            "Default",
            &crate::support::fixtures::numbers(0..500),
        )
        .await;
    let pid: i64 = first[0]["partitionId"]
        .as_str()
        .and_then(|p| p.parse().ok())
        .expect("partitionId");
    for k in 1..21 {
        b.push(
            "ttl-bound",
            "Default",
            &crate::support::fixtures::numbers(k * 500..(k + 1) * 500),
        )
        .await;
    }
    let_time_pass(Duration::from_millis(2_300)).await;
    b.push("ttl-bound", "Default", &[json!("live")]).await;

    // Act
    let stopped = b.pop_messages("/api/v1/pop/queue/ttl-bound?batch=10").await;
    let cursor_after_first = committed(&b, pid).await;
    let live = b.pop_messages("/api/v1/pop/queue/ttl-bound?batch=10").await;

    // Assert
    assert!(stopped.is_empty(), "{stopped:?}");
    assert_eq!(
        cursor_after_first, 9_999,
        "10,000 messages expired by the first claim"
    );
    assert_eq!(payloads(&live), vec![json!("live")]);
    assert_eq!(offsets(&live), vec![10_500]);
}

/// One claim files at most 16 MB of dead-letter copies (each dead letter copies its whole
/// segment): with three expired segments of about 10 MB of copies each, the first pop
/// files two and stops, the next files the third and delivers the live message.
#[actix_rt::test]
async fn one_claim_files_at_most_sixteen_megabytes_of_dead_letter_copies() {
    // Arrange: 40 messages of 8 KB of random text per segment (incompressible enough).
    let b = TestBroker::start().await;
    configure(&b, "ttl-bytes", json!({ "ttl": 2 })).await;
    let mut rng = fastrand::Rng::with_seed(11);
    for _ in 0..3 {
        let big: Vec<Value> = (0..40)
            .map(|_| {
                let bytes: Vec<u8> = (0..6_000).map(|_| rng.u8(..)).collect();
                json!(base64::Engine::encode(
                    &base64::engine::general_purpose::STANDARD,
                    bytes
                ))
            })
            .collect();
        b.push("ttl-bytes", "Default", &big).await;
    }
    let_time_pass(Duration::from_millis(2_300)).await;
    b.push("ttl-bytes", "Default", &[json!("live")]).await;
    let filed = || sql_count(&b, "SELECT count(*) FROM queen.dead_letters");

    // Act
    let stopped = b.pop_messages("/api/v1/pop/queue/ttl-bytes?batch=10").await;
    let filed_first = filed().await;
    let live = b.pop_messages("/api/v1/pop/queue/ttl-bytes?batch=10").await;

    // Assert
    assert!(stopped.is_empty(), "{} messages", stopped.len());
    assert_eq!(filed_first, 80, "two segments' copies pass 16 MB");
    assert_eq!(payloads(&live), vec![json!("live")]);
    assert_eq!(filed().await, 120);
}
