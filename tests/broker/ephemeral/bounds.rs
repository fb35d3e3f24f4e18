//! Bounds and both policies, and the TTL: `reject` answers 429 with `Retry-After` and
//! stores nothing of the push; `dropOldest` keeps the newest; a push alone past the bounds
//! is 413; messages older than `ttlSeconds` are gone.

use std::time::Duration;

use reqwest::StatusCode;
use serde_json::json;

use super::{configure, depth, payloads, pop, push, push_ok};
use crate::support::TestBroker;

#[actix_rt::test]
async fn a_full_reject_queue_answers_429_and_keeps_what_it_had() {
    let b = TestBroker::start().await;
    configure(&b, "r", json!({"maxLength": 3, "policy": "reject"})).await;
    push_ok(&b, "r", &[json!(1), json!(2)]).await;
    let (status, body) = push(&b, "r", None, &[json!(3), json!(4)]).await;
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS, "{body}");
    assert_eq!(body["error"], "queue_full", "{body}");
    let retry = b
        .http
        .post(b.url("/api/v1/ephemeral/push"))
        .json(&json!({"queue": "r", "messages": [{"payload": 5}, {"payload": 6}]}))
        .send()
        .await
        .unwrap();
    assert_eq!(retry.status(), StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(retry.headers()["retry-after"], "1");
    assert_eq!(depth(&b, "r").await["refused"], 2);
    push_ok(&b, "r", &[json!(3)]).await;
    assert_eq!(
        payloads(&pop(&b, "r", "batch=10").await),
        [json!(1), json!(2), json!(3)]
    );
}

#[actix_rt::test]
async fn max_bytes_bounds_a_reject_queue_too() {
    let b = TestBroker::start().await;
    // 128 bytes of fixed cost per message plus the payload's JSON text.
    configure(&b, "rb", json!({"maxBytes": 400})).await;
    push_ok(&b, "rb", &[json!("x".repeat(50)), json!("y".repeat(50))]).await;
    let (status, body) = push(&b, "rb", None, &[json!("z".repeat(50))]).await;
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS, "{body}");
    let d = depth(&b, "rb").await;
    assert_eq!(d["pending"], 2, "{d}");
    assert_eq!(d["bytes"], 2 * (128 + 52), "{d}");
}

#[actix_rt::test]
async fn drop_oldest_keeps_the_newest_and_counts_the_drops() {
    let b = TestBroker::start().await;
    configure(&b, "feed", json!({"maxLength": 3, "policy": "dropOldest"})).await;
    for n in 1..=5 {
        push_ok(&b, "feed", &[json!(n)]).await;
    }
    push_ok(&b, "feed", &[json!(6), json!(7)]).await;
    let d = depth(&b, "feed").await;
    assert_eq!(d["dropped"], 4, "{d}");
    assert_eq!(
        payloads(&pop(&b, "feed", "batch=10").await),
        [json!(5), json!(6), json!(7)]
    );
}

#[actix_rt::test]
async fn a_push_larger_than_the_bounds_is_413_under_either_policy() {
    let b = TestBroker::start().await;
    configure(&b, "small", json!({"maxLength": 2, "policy": "dropOldest"})).await;
    push_ok(&b, "small", &[json!("kept")]).await;
    let (status, body) = push(&b, "small", None, &[json!(1), json!(2), json!(3)]).await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE, "{body}");
    assert_eq!(body["error"], "too_large", "{body}");
    assert_eq!(
        payloads(&pop(&b, "small", "batch=10").await),
        [json!("kept")]
    );
}

#[actix_rt::test]
async fn messages_older_than_the_ttl_are_gone() {
    let b = TestBroker::start().await;
    configure(&b, "ttl", json!({"ttlSeconds": 1})).await;
    push_ok(&b, "ttl", &[json!("old")]).await;
    tokio::time::sleep(Duration::from_millis(1100)).await;
    push_ok(&b, "ttl", &[json!("new")]).await;
    assert_eq!(payloads(&pop(&b, "ttl", "batch=10").await), [json!("new")]);
    assert_eq!(depth(&b, "ttl").await["expired"], 1);
}
