//! Producer stamping: with authentication on, every message pushed (JSON, binary flag 8,
//! transaction) carries the token's `sub` as `producerSub`, whatever the body says, and the
//! pops, the admin message views and the dead-letter list show it.

use reqwest::StatusCode;
use serde_json::{json, Value};

use super::HS256;
use crate::support::fixtures::{configure, entry};
use crate::support::qpb1::{compress_frames, framed, Frame};
use crate::support::tokens::{claims, hs256, SECRET};
use crate::support::TestBroker;

/// A JSON push naming its own `producerSub`, a binary flag-8 push and a transaction push
/// all pop back stamped with the token's subject; the message views and the DLQ agree.
#[actix_rt::test]
async fn pushed_messages_carry_the_tokens_subject_everywhere_they_are_shown() {
    // Arrange
    let mut b = TestBroker::start_with(&HS256).await;
    b.authorize(Some(&hs256(SECRET, &claims("alice@example", "admin"))));
    configure(&b, "stamped", json!({"retryLimit": 0})).await;

    // Act: three ways in, one of them claiming to be someone else.
    let (status, body) = b
        .post(
            "/api/v1/push",
            &json!({"items": [{"queue": "stamped", "payload": {"n": 1}, "producerSub": "mallory"}]}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let frames = [Frame::new("bin-1", r#"{"n":2}"#)];
    let z = compress_frames(&frames);
    let (status, body) = b
        .post_raw(
            "/api/v1/push",
            "application/x-queen-push",
            framed(&[("stamped", "Default", 1, &z)]),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let (status, body) = b
        .post(
            "/api/v1/transaction",
            &json!({"operations": [{"type": "push", "items": [{"queue": "stamped", "payload": {"n": 3}}]}]}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let popped = b.pop_messages("/api/v1/pop/queue/stamped?batch=10").await;

    // Assert: the pop.
    assert_eq!(popped.len(), 3, "{popped:?}");
    for m in &popped {
        assert_eq!(m["producerSub"], "alice@example", "{m}");
    }
    // The admin views of one message.
    let first = &popped[0];
    let detail = format!(
        "/api/v1/messages/{}/{}",
        first["partitionId"].as_str().unwrap(),
        first["transactionId"].as_str().unwrap()
    );
    let (status, body) = b.get(&detail).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["producerSub"], "alice@example", "{body}");
    let (_, list) = b.get("/api/v1/messages?queue=stamped").await;
    let listed: Vec<&Value> = list["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .collect();
    assert_eq!(listed.len(), 3, "{list}");
    assert!(
        listed.iter().all(|m| m["producerSub"] == "alice@example"),
        "{list}"
    );
    // A dead letter keeps it.
    let (_, nack) = b
        .post("/api/v1/ack", &entry(first, "failed", Some("no")))
        .await;
    assert_eq!(nack[0]["success"], true, "{nack}");
    let (_, dlq) = b.get("/api/v1/dlq?queue=stamped").await;
    let dead = dlq["messages"].as_array().expect("dead letters");
    assert_eq!(dead.len(), 1, "{dlq}");
    assert_eq!(dead[0]["producerSub"], "alice@example", "{dlq}");
    b.stop().await;
}

/// Without authentication nobody is stamped, and a body still cannot name a producer.
#[actix_rt::test]
async fn without_authentication_no_producer_is_stamped_and_the_body_is_ignored() {
    let b = TestBroker::start().await;
    let (status, _) = b
        .post(
            "/api/v1/push",
            &json!({"items": [{"queue": "unstamped", "payload": 1, "producerSub": "mallory"}]}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED);
    let popped = b.pop_messages("/api/v1/pop/queue/unstamped").await;
    assert_eq!(popped.len(), 1);
    assert_eq!(popped[0]["producerSub"], Value::Null, "{}", popped[0]);
    b.stop().await;
}
