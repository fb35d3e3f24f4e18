//! Real concurrency against one broker: many consumers, many partitions, and checks for
//! losses and duplicates rather than for "no error".

use std::sync::atomic::AtomicUsize;
use std::sync::Arc;
use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::Value;

use crate::support::drain::{assert_exactly_once_in_order, consume, drain, fill};
use crate::support::TestBroker;

/// 16 concurrent consumers over 64 partitions drain 20,000 messages exactly once.
#[actix_rt::test]
async fn sixteen_consumers_over_sixty_four_partitions_drain_twenty_thousand_messages_exactly_once()
{
    let broker = Arc::new(TestBroker::start_with(&[("DB_POOL_SIZE", "40")]).await);
    let (partitions, per_partition) = (64usize, 313usize); // 20,032 messages
    fill(&broker, "drain", partitions, per_partition).await;
    let total = partitions * per_partition;

    let all = drain(
        broker.clone(),
        "/api/v1/pop/queue/drain?batch=50&partitions=2&wait=true&timeout=500",
        16,
        total,
        Duration::from_secs(120),
    )
    .await;

    assert_exactly_once_in_order("drain", &all, partitions as u64, per_partition as u64);
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
    assert_exactly_once_in_order(
        "convoy",
        &[all_pairs],
        partitions as u64,
        per_partition as u64,
    );
}
