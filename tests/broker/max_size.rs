//! `maxSize`: a push that would make the queue store more messages than it allows is
//! refused per item (`status: failed` with an error) and stores nothing, also when many
//! producers push to different partitions at once, and in a transaction bundle.

use std::sync::Arc;

use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::support::fixtures::{configure, numbers, sql_count};
use crate::support::TestBroker;

async fn stored(b: &TestBroker, queue: &str) -> i64 {
    sql_count(
        b,
        &format!(
            "SELECT coalesce(sum(s.msg_count), 0)::bigint FROM queen.log_segments s
             JOIN queen.log_partitions p ON p.id = s.partition_id
             JOIN queen.queues q ON q.id = p.queue_id WHERE q.name = '{queue}'"
        ),
    )
    .await
}

async fn push(b: &TestBroker, queue: &str, partition: &str, payloads: &[Value]) -> Vec<Value> {
    let items: Vec<Value> = payloads
        .iter()
        .map(|p| json!({"queue": queue, "partition": partition, "payload": p}))
        .collect();
    let (status, body) = b.post("/api/v1/push", &json!({ "items": items })).await;
    assert!(status.is_success(), "push answered {status}: {body}");
    body.as_array().expect("an array").clone()
}

/// Three fit, three more (another partition) would pass five: refused, nothing stored;
/// two more fit exactly; one more is refused; a transaction pushing past it rolls back.
#[actix_rt::test]
async fn a_push_past_max_size_fails_per_item_and_stores_nothing_beyond_it() {
    // Arrange
    let b = TestBroker::start().await;
    configure(&b, "ms", json!({"maxSize": 5})).await;

    // Act
    let first = push(&b, "ms", "a", &numbers(0..3)).await;
    let over = push(&b, "ms", "b", &numbers(3..6)).await;
    let fits = push(&b, "ms", "b", &numbers(3..5)).await;
    let one_more = push(&b, "ms", "a", &numbers(5..6)).await;
    let (status, bundle) = b
        .post(
            "/api/v1/transaction",
            &json!({"operations": [{"type": "push", "items": [
                {"queue": "ms", "partition": "c", "payload": 9, "transactionId": "t9"}]}],
                "requiredLeases": []}),
        )
        .await;

    // Assert
    assert!(first.iter().all(|a| a["status"] == "queued"), "{first:?}");
    for a in &over {
        assert_eq!(a["status"], "failed", "{a}");
        assert!(a["error"].as_str().unwrap().contains("maxSize is 5"), "{a}");
    }
    assert!(fits.iter().all(|a| a["status"] == "queued"), "{fits:?}");
    assert_eq!(one_more[0]["status"], "failed", "{one_more:?}");
    assert_eq!(status, StatusCode::OK);
    assert_eq!(bundle["success"], false, "{bundle}");
    assert!(
        bundle["error"].as_str().unwrap().contains("maxSize"),
        "{bundle}"
    );
    assert_eq!(stored(&b, "ms").await, 5);
    let popped = b
        .pop_messages("/api/v1/pop/queue/ms?batch=10&partitions=4&autoAck=true")
        .await;
    assert_eq!(popped.len(), 5);
}

/// Sixteen producers pushing single messages to eight partitions at once never make the
/// queue hold more than maxSize: exactly maxSize answers are `queued`, the rest `failed`,
/// and exactly maxSize messages are stored.
#[actix_rt::test]
async fn concurrent_producers_on_many_partitions_never_overfill_the_queue() {
    // Arrange
    let b = Arc::new(TestBroker::start_with(&[("DB_POOL_SIZE", "20")]).await);
    configure(&b, "ms-race", json!({"maxSize": 50})).await;

    // Act
    let tasks: Vec<_> = (0..16)
        .map(|w| {
            let b = b.clone();
            tokio::spawn(async move {
                let mut answers = Vec::new();
                for n in 0..10 {
                    let partition = format!("p{}", (w + n) % 8);
                    answers
                        .extend(push(&b, "ms-race", &partition, &[json!({"w": w, "n": n})]).await);
                }
                answers
            })
        })
        .collect();
    let mut answers = Vec::new();
    for t in tasks {
        answers.extend(t.await.expect("producer"));
    }

    // Assert
    let queued = answers.iter().filter(|a| a["status"] == "queued").count();
    let failed = answers.iter().filter(|a| a["status"] == "failed").count();
    assert_eq!(queued, 50, "queued answers");
    assert_eq!(failed, 160 - 50);
    assert_eq!(stored(&b, "ms-race").await, 50);
}
