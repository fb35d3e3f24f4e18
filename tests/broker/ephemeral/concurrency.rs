//! Many producers and consumers at once, with real concurrency: every message pushed is
//! delivered exactly once to the group whose consumers compete, and once to a fan-out
//! group beside it; nothing is lost, nothing doubled.

use std::collections::HashSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::support::TestBroker;

const PRODUCERS: usize = 8;
const PUSHES: usize = 25;
const BATCH: usize = 10;
const CONSUMERS: usize = 6;

async fn consume(b: &TestBroker, group: &'static str, total: usize) -> Vec<Vec<u64>> {
    let mut tasks = Vec::new();
    let seen = Arc::new(AtomicUsize::new(0));
    for _ in 0..CONSUMERS {
        let seen = seen.clone();
        let http = b.http.clone();
        let base = b.base.clone();
        tasks.push(tokio::spawn(async move {
            let mut got = Vec::new();
            let deadline = Instant::now() + Duration::from_secs(60);
            while Instant::now() < deadline {
                let url = format!("{base}/api/v1/ephemeral/pop?queue=crowd&group={group}&batch=10&wait=true&timeout=300");
                let answer: Value = http.get(url).send().await.unwrap().json().await.unwrap();
                let messages = answer["messages"].as_array().cloned().unwrap_or_default();
                if messages.is_empty() && seen.load(Ordering::SeqCst) >= total {
                    break;
                }
                if messages.is_empty() {
                    continue;
                }
                let acks: Vec<Value> = messages.iter().map(|m| json!({"id": m["id"]})).collect();
                let acked: Value = http
                    .post(format!("{base}/api/v1/ephemeral/ack"))
                    .json(&json!({"queue": "crowd", "group": group, "acks": acks}))
                    .send()
                    .await
                    .unwrap()
                    .json()
                    .await
                    .unwrap();
                for r in acked["results"].as_array().unwrap() {
                    assert_eq!(r["outcome"], "acked", "{acked}");
                }
                seen.fetch_add(messages.len(), Ordering::SeqCst);
                got.extend(messages.iter().map(|m| m["payload"].as_u64().unwrap()));
            }
            got
        }));
    }
    let mut all = Vec::new();
    for t in tasks {
        all.push(t.await.unwrap());
    }
    all
}

#[actix_rt::test]
async fn many_producers_and_consumers_lose_and_double_nothing() {
    let b = TestBroker::start().await;
    let total = PRODUCERS * PUSHES * BATCH;
    // Both groups exist before the first push, so each sees every message.
    for group in ["workers", "audit"] {
        let (status, _) = b
            .get(&format!("/api/v1/ephemeral/pop?queue=crowd&group={group}"))
            .await;
        assert!(status.is_success());
    }
    let workers = consume(&b, "workers", total);
    let audit = consume(&b, "audit", total);
    let mut producers = Vec::new();
    for p in 0..PRODUCERS {
        let http = b.http.clone();
        let base = b.base.clone();
        producers.push(tokio::spawn(async move {
            for i in 0..PUSHES {
                let messages: Vec<Value> = (0..BATCH)
                    .map(|k| json!({"payload": (p * PUSHES * BATCH + i * BATCH + k) as u64}))
                    .collect();
                let response = http
                    .post(format!("{base}/api/v1/ephemeral/push"))
                    .json(&json!({"queue": "crowd", "messages": messages}))
                    .send()
                    .await
                    .unwrap();
                assert_eq!(response.status(), 200);
            }
        }));
    }
    let (workers, audit) = tokio::join!(workers, audit);
    for p in producers {
        p.await.unwrap();
    }
    for (name, per_consumer) in [("workers", workers), ("audit", audit)] {
        let all: Vec<u64> = per_consumer.into_iter().flatten().collect();
        let distinct: HashSet<u64> = all.iter().copied().collect();
        assert_eq!(
            distinct.len(),
            total,
            "{name}: lost {}",
            total - distinct.len()
        );
        assert_eq!(all.len(), total, "{name}: {} duplicates", all.len() - total);
    }
    let (_, depth) = b.get("/api/v1/ephemeral/queues/crowd/depth").await;
    assert_eq!(depth["pending"], 0, "{depth}");
}
