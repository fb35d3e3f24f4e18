//! The long poll: a waiting pop parks with no polling and a push wakes it at once; with
//! nothing pushed it answers empty at its timeout.

use std::time::{Duration, Instant};

use serde_json::json;

use super::{payloads, pop, push_ok};
use crate::support::TestBroker;

#[actix_rt::test]
async fn a_push_wakes_a_parked_pop_at_once() {
    let b = TestBroker::start().await;
    assert!(pop(&b, "wake", "").await.is_empty());
    let url = b.url("/api/v1/ephemeral/pop?queue=wake&wait=true&timeout=10000");
    let parked = tokio::spawn({
        let http = b.http.clone();
        async move {
            let answer: serde_json::Value =
                http.get(url).send().await.unwrap().json().await.unwrap();
            (Instant::now(), answer)
        }
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    let pushed_at = Instant::now();
    push_ok(&b, "wake", &[json!("now")]).await;
    let (woke_at, answer) = parked.await.unwrap();
    let latency = woke_at - pushed_at;
    assert_eq!(answer["messages"][0]["payload"], "now", "{answer}");
    assert!(
        latency < Duration::from_millis(100),
        "woken {latency:?} after the push"
    );
}

#[actix_rt::test]
async fn a_waiting_pop_with_nothing_answers_empty_at_its_timeout() {
    let b = TestBroker::start().await;
    let start = Instant::now();
    let got = pop(&b, "quiet", "wait=true&timeout=300").await;
    let waited = start.elapsed();
    assert!(got.is_empty());
    assert!(waited >= Duration::from_millis(290), "{waited:?}");
    assert!(waited < Duration::from_millis(2000), "{waited:?}");
    push_ok(&b, "quiet", &[json!(1)]).await;
    assert_eq!(
        payloads(&pop(&b, "quiet", "wait=true&timeout=300").await),
        [json!(1)]
    );
}

#[actix_rt::test]
async fn a_window_buffer_lets_a_waiting_pop_fatten_its_batch() {
    let b = TestBroker::start().await;
    super::configure(
        &b,
        "window",
        json!({"windowBuffer": {"ms": 400, "count": 3}}),
    )
    .await;
    let url = b.url("/api/v1/ephemeral/pop?queue=window&wait=true&timeout=5000&batch=10");
    let parked = tokio::spawn({
        let http = b.http.clone();
        async move {
            http.get(url)
                .send()
                .await
                .unwrap()
                .json::<serde_json::Value>()
                .await
                .unwrap()
        }
    });
    tokio::time::sleep(Duration::from_millis(200)).await;
    push_ok(&b, "window", &[json!(1)]).await;
    tokio::time::sleep(Duration::from_millis(50)).await;
    push_ok(&b, "window", &[json!(2), json!(3)]).await;
    let answer = parked.await.unwrap();
    assert_eq!(
        answer["messages"].as_array().map(Vec::len),
        Some(3),
        "{answer}"
    );
}
