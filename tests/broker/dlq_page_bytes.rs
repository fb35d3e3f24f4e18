//! The DLQ listing reads a bounded number of bytes: each dead letter carries the whole
//! segment that held it, so a page stops once its copies pass 16 MiB and says where the
//! next page starts.

use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::support::fixtures::{configure, entry};
use crate::support::TestBroker;

/// A payload of `bytes` hex digits zstd cannot shrink by more than half.
fn incompressible(bytes: usize) -> String {
    let mut s = String::with_capacity(bytes + 32);
    while s.len() < bytes {
        s.push_str(&uuid::Uuid::new_v4().simple().to_string());
    }
    s
}

/// Six dead letters of about 5 MB of segment each are listed over pages of at most
/// 16 MiB of copies (each page shorter than its limit, with `nextOffset`), and the pages
/// together list all six once.
#[actix_rt::test]
async fn a_dlq_listing_of_large_dead_letters_pages_by_bytes_and_lists_each_once() {
    // Arrange: six large messages, each failed once under retryLimit 0.
    let b = TestBroker::start().await;
    let queue = "dlq-bytes";
    configure(&b, queue, json!({ "retryLimit": 0 })).await;
    for n in 0..6 {
        b.push(
            queue,
            "Default",
            &[json!({"n": n, "fill": incompressible(10 << 20)})],
        )
        .await;
        let got = b
            .pop_messages(&format!("/api/v1/pop/queue/{queue}?batch=1"))
            .await;
        assert_eq!(got.len(), 1);
        let (_, nack) = b
            .post("/api/v1/ack", &entry(&got[0], "failed", Some("too big")))
            .await;
        assert_eq!(nack[0]["success"], true, "{nack}");
    }

    // Act: page through with limit 100.
    let mut pages = Vec::new();
    let mut offset = Value::from(0);
    while let Some(at) = offset.as_i64() {
        assert!(pages.len() < 10, "the listing never ended");
        let (status, body) = b
            .get(&format!("/api/v1/dlq?queue={queue}&limit=100&offset={at}"))
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        let ns: Vec<i64> = body["messages"]
            .as_array()
            .expect("messages")
            .iter()
            .map(|m| m["data"]["n"].as_i64().expect("a readable dead letter"))
            .collect();
        assert_eq!(body["total"], 6);
        offset = body["nextOffset"].clone();
        pages.push(ns);
    }

    // Assert
    assert!(pages.len() >= 2, "one page read every copy: {pages:?}");
    assert!(pages.iter().all(|p| p.len() < 6), "{pages:?}");
    let mut all: Vec<i64> = pages.concat();
    all.sort_unstable();
    assert_eq!(all, (0..6).collect::<Vec<i64>>());
    b.stop().await;
}
