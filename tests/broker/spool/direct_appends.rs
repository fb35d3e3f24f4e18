//! Paths that append without the spool (a transaction bundle's pushes, the dead-letter
//! retry) never overtake pushes the spool holds: while push maintenance is on they answer
//! a retryable 503 and change nothing; retried after it ends, they land behind the
//! spooled pushes, so a group reads the partition in the order its pushes were answered.

use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{json, Value};

use super::{assert_all, push, wait_replayed};
use crate::admin_dlq::dead_letter_one;
use crate::support::{payloads, TestBroker};

async fn switch(b: &TestBroker, on: bool) {
    let (status, answer) = b
        .post("/api/v1/system/maintenance", &json!({ "push": on }))
        .await;
    assert_eq!(status, StatusCode::OK, "{answer}");
}

/// POSTs a transaction; answers the status, the `Retry-After` header and the body.
async fn transaction(b: &TestBroker, body: &Value) -> (StatusCode, Option<String>, Value) {
    let response = b
        .http
        .post(b.url("/api/v1/transaction"))
        .json(body)
        .send()
        .await
        .expect("the transaction reaches the broker");
    let retry_after = response
        .headers()
        .get("retry-after")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let (status, body) = crate::support::read(response).await;
    (status, retry_after, body)
}

#[actix_rt::test]
async fn a_transaction_push_during_push_maintenance_is_refused_and_lands_behind_the_spool() {
    // Arrange: m1 spooled by push maintenance.
    let b = TestBroker::start().await;
    let queue = "txn-behind-spool";
    switch(&b, true).await;
    let m1 = json!({"queue": queue, "partition": "p", "payload": "m1"});
    let (status, body) = push(&b.http, &b.base, &[m1]).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    assert_all("buffered", &body);
    let bundle = json!({"operations": [{"type": "push", "items": [
        {"queue": queue, "partition": "p", "payload": "m2"}]}]});

    // Act: the bundle during maintenance, then again (as a client retries) after it.
    let (held, retry_after, refusal) = transaction(&b, &bundle).await;
    let stored_while_held = b
        .sql()
        .await
        .query_one(
            "SELECT count(*) FROM queen.log_segments s JOIN queen.log_partitions p \
             ON p.id = s.partition_id JOIN queen.queues q ON q.id = p.queue_id \
             WHERE q.name = $1",
            &[&queue],
        )
        .await
        .expect("count")
        .get::<_, i64>(0);
    switch(&b, false).await;
    wait_replayed(&b.http, &b.base, Duration::from_secs(30)).await;
    let (status, _, committed) = transaction(&b, &bundle).await;
    let got = b
        .pop_messages(&format!(
            "/api/v1/pop/queue/{queue}?consumerGroup=g&batch=10&autoAck=true"
        ))
        .await;

    // Assert
    assert_eq!(held, StatusCode::SERVICE_UNAVAILABLE, "{refusal}");
    assert_eq!(retry_after.as_deref(), Some("1"));
    let text = refusal["error"].as_str().unwrap_or_default();
    assert!(text.contains("push maintenance"), "{refusal}");
    assert_eq!(stored_while_held, 0, "the refused bundle stored something");
    assert_eq!(status, StatusCode::OK, "{committed}");
    assert_eq!(committed["success"], true, "{committed}");
    assert_eq!(payloads(&got), vec![json!("m1"), json!("m2")]);
    b.stop().await;
}

#[actix_rt::test]
async fn a_dead_letter_retry_during_push_maintenance_is_refused_and_lands_behind_the_spool() {
    // Arrange: a dead letter, then m1 spooled by push maintenance.
    let b = TestBroker::start().await;
    let queue = "dlq-behind-spool";
    let dead = dead_letter_one(&b, queue).await;
    switch(&b, true).await;
    let m1 = json!({"queue": queue, "partition": "Default", "payload": "m1"});
    let (status, body) = push(&b.http, &b.base, &[m1]).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    assert_all("buffered", &body);
    let retry = format!(
        "/api/v1/messages/{}/{}/retry",
        dead["partitionId"].as_str().expect("partition id"),
        dead["transactionId"].as_str().expect("transaction id")
    );

    // Act
    let (held, refusal) = b.post(&retry, &json!({})).await;
    let (_, listed) = b.get(&format!("/api/v1/dlq?queue={queue}")).await;
    switch(&b, false).await;
    wait_replayed(&b.http, &b.base, Duration::from_secs(30)).await;
    let (status, retried) = b.post(&retry, &json!({})).await;
    let got = b
        .pop_messages(&format!("/api/v1/pop/queue/{queue}?batch=10&autoAck=true"))
        .await;

    // Assert: refused and still dead-lettered; after maintenance, the copy after m1.
    assert_eq!(held, StatusCode::SERVICE_UNAVAILABLE, "{refusal}");
    assert!(refusal["error"].is_string(), "{refusal}");
    assert_eq!(listed["total"], 1, "{listed}");
    assert_eq!(status, StatusCode::OK, "{retried}");
    assert_eq!(payloads(&got), vec![json!("m1"), json!({"dead": true})]);
    b.stop().await;
}
