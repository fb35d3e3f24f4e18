//! Concurrent bundles moving messages from one queue to another: counted for losses and
//! duplicates on both sides.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::{ack_op, bundle};
use crate::support::drain::{drain, fill};
use crate::support::TestBroker;

/// Concurrent bundles, each acking one popped message and pushing one new message into
/// another queue, lose nothing and duplicate nothing on either side.
#[actix_rt::test]
async fn concurrent_bundles_move_every_message_exactly_once() {
    // Arrange
    let b = Arc::new(TestBroker::start_with(&[("DB_POOL_SIZE", "20")]).await);
    let (partitions, per_partition) = (16usize, 8usize);
    let total = partitions * per_partition;
    fill(&b, "mv-src", partitions, per_partition).await;
    let moved = Arc::new(AtomicUsize::new(0));
    let deadline = Instant::now() + Duration::from_secs(60);

    // Act
    let workers: Vec<_> = (0..12)
        .map(|w| {
            let (b, moved) = (b.clone(), moved.clone());
            tokio::spawn(async move {
                let mut delivered = Vec::new();
                let mut n = 0;
                while moved.load(Ordering::SeqCst) < total && Instant::now() < deadline {
                    let popped = b.pop_messages("/api/v1/pop/queue/mv-src?batch=1").await;
                    let Some(m) = popped.first() else {
                        tokio::task::yield_now().await;
                        continue;
                    };
                    n += 1;
                    let answer = bundle(
                        &b,
                        &json!({
                            "operations": [
                                ack_op(m, "completed"),
                                { "type": "push", "items": [{
                                    "queue": "mv-dst",
                                    "payload": m["data"],
                                    "transactionId": format!("w{w}-{n}"),
                                }] },
                            ],
                            "requiredLeases": [m["leaseId"]],
                        }),
                    )
                    .await;
                    assert_eq!(answer["success"], true, "{answer}");
                    delivered.push(m["data"].clone());
                    moved.fetch_add(1, Ordering::SeqCst);
                }
                delivered
            })
        })
        .collect();
    let mut from_source = Vec::new();
    for w in workers {
        from_source.extend(w.await.expect("worker"));
    }

    // Assert
    assert_eq!(
        from_source.len(),
        total,
        "not every message was moved in time"
    );
    assert_exactly_once(&from_source, partitions, per_partition, "mv-src");
    assert!(b
        .pop_messages("/api/v1/pop/queue/mv-src?batch=10")
        .await
        .is_empty());
    let streams = drain(
        b.clone(),
        "/api/v1/pop/queue/mv-dst?batch=10",
        2,
        total,
        Duration::from_secs(30),
    )
    .await;
    let arrived: Vec<Value> = streams
        .into_iter()
        .flatten()
        .map(|(p, i)| json!({ "p": p, "i": i }))
        .collect();
    assert_exactly_once(&arrived, partitions, per_partition, "mv-dst");
}

/// Every `{p, i}` of the fill exactly once: no loss, no duplicate.
fn assert_exactly_once(got: &[Value], partitions: usize, per_partition: usize, label: &str) {
    let mut seen: HashMap<(u64, u64), usize> = HashMap::new();
    for v in got {
        let key = (v["p"].as_u64().unwrap(), v["i"].as_u64().unwrap());
        *seen.entry(key).or_default() += 1;
    }
    let duplicates: Vec<_> = seen.iter().filter(|(_, n)| **n > 1).collect();
    assert!(duplicates.is_empty(), "{label}: duplicates {duplicates:?}");
    let lost: Vec<(u64, u64)> = (0..partitions as u64)
        .flat_map(|p| (0..per_partition as u64).map(move |i| (p, i)))
        .filter(|k| !seen.contains_key(k))
        .collect();
    assert!(lost.is_empty(), "{label}: lost {lost:?}");
}
