//! Real concurrency against one broker: many consumers, many partitions, and checks for
//! losses and duplicates rather than for "no error".

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::support::TestBroker;

/// Pushes `per_partition` messages to each of `partitions` partitions, payload `{"p":..,"i":..}`,
/// in batches of `batch` items spread over the partitions.
async fn fill(broker: &TestBroker, queue: &str, partitions: usize, per_partition: usize) {
    let mut items = Vec::new();
    for i in 0..per_partition {
        for p in 0..partitions {
            items.push(json!({
                "queue": queue,
                "partition": format!("p{p}"),
                "payload": {"p": p, "i": i},
            }));
        }
    }
    for chunk in items.chunks(500) {
        let (status, body) = broker
            .post("/api/v1/push", &json!({ "items": chunk }))
            .await;
        assert!(status.is_success(), "push answered {status}: {body}");
    }
}

/// One consumer: pops and acks until the shared count reaches `total` or the deadline.
async fn consume(
    broker: Arc<TestBroker>,
    path: String,
    group: Option<&'static str>,
    seen: Arc<AtomicUsize>,
    total: usize,
    deadline: Instant,
) -> Vec<(u64, u64)> {
    let mut got = Vec::new();
    while seen.load(Ordering::SeqCst) < total && Instant::now() < deadline {
        let (status, body) = broker.get(&path).await;
        match status {
            StatusCode::NO_CONTENT => continue,
            StatusCode::OK => {}
            other => panic!("pop answered {other}: {body}"),
        }
        let messages = body["messages"].as_array().expect("messages").clone();
        for m in &messages {
            got.push((
                m["data"]["p"].as_u64().expect("p"),
                m["data"]["i"].as_u64().expect("i"),
            ));
        }
        let answers = broker.ack_all(&messages, "completed", group).await;
        assert!(
            answers.iter().all(|a| a["success"] == true),
            "an ack was refused: {answers:?}"
        );
        seen.fetch_add(messages.len(), Ordering::SeqCst);
    }
    got
}

/// Every message pushed is delivered exactly once, and in order within its partition.
fn assert_exactly_once_in_order(all: &[Vec<(u64, u64)>], partitions: u64, per_partition: u64) {
    let mut per: HashMap<u64, Vec<u64>> = HashMap::new();
    for consumer in all {
        // Within one consumer's stream, a partition's messages arrive in offset order.
        let mut last: HashMap<u64, u64> = HashMap::new();
        for &(p, i) in consumer {
            if let Some(prev) = last.insert(p, i) {
                assert!(i > prev, "partition {p}: {i} after {prev} in one consumer");
            }
            per.entry(p).or_default().push(i);
        }
    }
    assert_eq!(
        per.len() as u64,
        partitions,
        "some partition delivered nothing"
    );
    for (p, mut got) in per {
        got.sort_unstable();
        let want: Vec<u64> = (0..per_partition).collect();
        assert_eq!(
            got.len() as u64,
            per_partition,
            "partition {p}: lost or duplicated messages"
        );
        assert_eq!(got, want, "partition {p}: lost or duplicated messages");
    }
}

/// 16 concurrent consumers over 64 partitions drain 20,000 messages exactly once.
#[actix_rt::test]
async fn sixteen_consumers_over_sixty_four_partitions_drain_twenty_thousand_messages_exactly_once()
{
    let broker = Arc::new(TestBroker::start_with(&[("DB_POOL_SIZE", "40")]).await);
    let (partitions, per_partition) = (64usize, 313usize); // 20,032 messages
    fill(&broker, "drain", partitions, per_partition).await;
    let total = partitions * per_partition;

    let seen = Arc::new(AtomicUsize::new(0));
    let deadline = Instant::now() + Duration::from_secs(120);
    let consumers: Vec<_> = (0..16)
        .map(|_| {
            tokio::spawn(consume(
                broker.clone(),
                "/api/v1/pop/queue/drain?batch=50&partitions=2&wait=true&timeout=500".to_owned(),
                None,
                seen.clone(),
                total,
                deadline,
            ))
        })
        .collect();
    let mut all = Vec::new();
    for c in consumers {
        all.push(c.await.expect("consumer task"));
    }

    assert_eq!(
        seen.load(Ordering::SeqCst),
        total,
        "not drained before the deadline"
    );
    assert_exactly_once_in_order(&all, partitions as u64, per_partition as u64);
    let leftover = broker
        .pop_messages("/api/v1/pop/queue/drain?batch=10")
        .await;
    assert!(
        leftover.is_empty(),
        "messages left after the drain: {leftover:?}"
    );
}

/// 32 concurrent wildcard pops on a brand-new queue with 256 partitions (the first-contact
/// convoy of the seed) all answer promptly, none with an error, and nothing is lost.
#[actix_rt::test]
async fn thirty_two_concurrent_first_pops_on_a_new_queue_of_256_partitions_neither_deadlock_nor_stall(
) {
    let broker = Arc::new(TestBroker::start_with(&[("DB_POOL_SIZE", "40")]).await);
    let (partitions, per_partition) = (256usize, 4usize);
    fill(&broker, "convoy", partitions, per_partition).await;

    let started = Instant::now();
    let pops: Vec<_> = (0..32)
        .map(|_| {
            let broker = broker.clone();
            tokio::spawn(async move {
                let t = Instant::now();
                let (status, body) = broker
                    .get("/api/v1/pop/queue/convoy?batch=16&partitions=8&consumerGroup=fresh")
                    .await;
                (status, body, t.elapsed())
            })
        })
        .collect();
    let mut delivered: Vec<Value> = Vec::new();
    for p in pops {
        let (status, body, elapsed) = p.await.expect("pop task");
        assert!(
            status == StatusCode::OK || status == StatusCode::NO_CONTENT,
            "pop answered {status}: {body}"
        );
        assert!(
            elapsed < Duration::from_secs(10),
            "a pop stalled for {elapsed:?}"
        );
        if status == StatusCode::OK {
            delivered.extend(
                body["messages"]
                    .as_array()
                    .expect("messages")
                    .iter()
                    .cloned(),
            );
        }
    }
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "the 32 first pops took {:?}",
        started.elapsed()
    );
    assert!(!delivered.is_empty(), "the first pops delivered nothing");

    // No message went to two pops, and acking them then draining finds every message once.
    let mut ids: Vec<String> = delivered.iter().map(|m| m["id"].to_string()).collect();
    ids.sort();
    let before = ids.len();
    ids.dedup();
    assert_eq!(
        before,
        ids.len(),
        "two concurrent pops got the same message"
    );
    let answers = broker.ack_all(&delivered, "completed", Some("fresh")).await;
    assert!(answers.iter().all(|a| a["success"] == true), "{answers:?}");

    let seen = Arc::new(AtomicUsize::new(delivered.len()));
    let rest = consume(
        broker.clone(),
        "/api/v1/pop/queue/convoy?batch=100&partitions=16&consumerGroup=fresh".to_owned(),
        Some("fresh"),
        seen.clone(),
        partitions * per_partition,
        Instant::now() + Duration::from_secs(60),
    )
    .await;
    let mut all_pairs: Vec<(u64, u64)> = delivered
        .iter()
        .map(|m| {
            (
                m["data"]["p"].as_u64().unwrap(),
                m["data"]["i"].as_u64().unwrap(),
            )
        })
        .collect();
    all_pairs.extend(rest);
    assert_exactly_once_in_order(&[all_pairs], partitions as u64, per_partition as u64);
}
