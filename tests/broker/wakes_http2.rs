//! HTTP/2 long-polls (`QUEEN_HTTP2=true`): pops parked as streams of one shared cleartext
//! HTTP/2 connection are woken by a push at once, each message reaching exactly one of
//! them, while HTTP/1.1 clients keep using the same port.

use std::time::{Duration, Instant};

use reqwest::{StatusCode, Version};
use serde_json::{json, Value};

use crate::support::fixtures::{configure, counter, first_contact, wait_parked, TIMING};
use crate::support::TestBroker;

const QUEUE: &str = "h2wake";
const PARKED: usize = 50;

/// What one HTTP/2 pop answered, and when.
struct H2Answer {
    version: Version,
    status: StatusCode,
    body: Value,
    at: Instant,
}

#[actix_rt::test]
async fn pops_parked_on_one_http2_connection_are_woken_by_a_push_and_share_its_messages() {
    let _quiet = TIMING.lock().await;
    // Arrange: re-polls and reseeds far away, so only a push wake answers in time.
    let b = TestBroker::start_with(&[
        ("QUEEN_HTTP2", "true"),
        ("QUEEN_HOTLIST_RESEED_MS", "600000"),
        ("POP_WAIT_INITIAL_INTERVAL_MS", "10000"),
        ("POP_WAIT_MAX_INTERVAL_MS", "10000"),
    ])
    .await;
    configure(&b, QUEUE, json!({})).await;
    first_contact(&b, QUEUE, "__QUEUE_MODE__").await;
    let h2 = reqwest::Client::builder()
        .http2_prior_knowledge()
        .build()
        .expect("an HTTP/2 client");
    let url = b.url(&format!(
        "/api/v1/pop/queue/{QUEUE}?wait=true&timeout=20000&batch=1&autoAck=true"
    ));
    let pops: Vec<_> = (0..PARKED)
        .map(|_| {
            let (h2, url) = (h2.clone(), url.clone());
            tokio::spawn(async move {
                let answer = h2
                    .get(&url)
                    .send()
                    .await
                    .expect("an HTTP/2 pop is answered");
                let (version, status) = (answer.version(), answer.status());
                let bytes = answer.bytes().await.expect("the pop's body");
                H2Answer {
                    version,
                    status,
                    body: serde_json::from_slice(&bytes).unwrap_or(Value::Null),
                    at: Instant::now(),
                }
            })
        })
        .collect();
    wait_parked(&b, PARKED as i64).await;

    // Act: one push (over HTTP/1.1, same port) of a message to each of PARKED partitions.
    let items: Vec<Value> = (0..PARKED)
        .map(|i| json!({ "queue": QUEUE, "partition": format!("p{i}"), "payload": i }))
        .collect();
    let sent = Instant::now();
    let (status, body) = b.post("/api/v1/push", &json!({ "items": items })).await;
    assert!(status.is_success(), "push answered {status}: {body}");

    // Assert: every pop answered over HTTP/2 with one message, long before any re-poll;
    // together they hold each pushed message exactly once.
    let mut got = Vec::new();
    let mut slowest = Duration::ZERO;
    for pop in pops {
        let answer = pop.await.expect("pop task");
        assert_eq!(answer.version, Version::HTTP_2);
        assert_eq!(answer.status, StatusCode::OK, "{}", answer.body);
        let messages = answer.body["messages"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        assert_eq!(messages.len(), 1, "{}", answer.body);
        got.push(messages[0]["data"].as_u64().expect("a numeric payload"));
        slowest = slowest.max(answer.at.saturating_duration_since(sent));
    }
    got.sort_unstable();
    assert_eq!(got, (0..PARKED as u64).collect::<Vec<_>>());
    assert!(
        slowest < Duration::from_secs(3),
        "the last HTTP/2 pop answered {slowest:?} after the push (re-polls are 10 s apart)"
    );
    assert_eq!(counter(&b, "/pops/parked").await, 0);
}
