//! Lease expiries under real concurrency: consumers that crash on some messages (pop, never
//! ack) and settle the rest, all at once over several partitions. Every message ends
//! exactly once: settled by one successful ack, or filed once in the dead letters after
//! its retries are spent; none is lost, none is both, none is filed twice.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::support::fixtures::{configure, entry, partition_id};
use crate::support::TestBroker;

/// Partitions of the queue, messages in each, and every how-many-th message is poison.
const PARTITIONS: usize = 4;
const PER_PARTITION: i64 = 10;
const POISON_EVERY: i64 = 5;
const CONSUMERS: usize = 6;

/// (partition id, offset) of one message.
type Key = (i64, i64);

/// Six consumers, each crashing on poison, drain four partitions whose poison
/// messages expire their 2 s leases until retryLimit 1 is spent: each poison message is filed
/// once, each other message is settled once.
#[actix_rt::test]
async fn crashing_consumers_leave_every_message_settled_or_dead_lettered_exactly_once() {
    // Arrange
    let b = Arc::new(TestBroker::start_with(&[("DB_POOL_SIZE", "20")]).await);
    configure(&b, "crowd", json!({ "leaseTime": 2, "retryLimit": 1 })).await;
    for p in 0..PARTITIONS {
        let payloads: Vec<Value> = (0..PER_PARTITION)
            .map(|n| json!({ "n": n, "poison": n % POISON_EVERY == 2 }))
            .collect();
        b.push("crowd", &format!("p{p}"), &payloads).await;
    }
    let total = PARTITIONS * PER_PARTITION as usize;
    let poison = PARTITIONS * (PER_PARTITION / POISON_EVERY) as usize;
    let settled: Arc<Mutex<Vec<Key>>> = Arc::default();
    let seen_poison: Arc<Mutex<BTreeSet<Key>>> = Arc::default();

    // Act
    let deadline = Instant::now() + Duration::from_secs(60);
    let workers: Vec<_> = (0..CONSUMERS)
        .map(|_| {
            let (b, settled, seen_poison) = (b.clone(), settled.clone(), seen_poison.clone());
            tokio::spawn(async move {
                while Instant::now() < deadline {
                    let filed = dead_letter_keys(&b).await.len();
                    if settled.lock().unwrap().len() + filed >= total {
                        break;
                    }
                    let got = b
                        .pop_messages("/api/v1/pop/queue/crowd?batch=1&wait=true&timeout=300")
                        .await;
                    let Some(m) = got.first() else { continue };
                    let key = (partition_id(m), m["offset"].as_i64().unwrap());
                    if m["data"]["poison"] == true {
                        seen_poison.lock().unwrap().insert(key); // crash: never ack
                        continue;
                    }
                    let (_, answer) = b.post("/api/v1/ack", &entry(m, "completed", None)).await;
                    if answer[0]["success"] == true {
                        settled.lock().unwrap().push(key);
                    }
                }
            })
        })
        .collect();
    for w in workers {
        w.await.expect("consumer task");
    }

    // Assert
    let settled = settled.lock().unwrap().clone();
    let filed = dead_letter_keys(&b).await;
    let mut count: BTreeMap<Key, usize> = BTreeMap::new();
    for k in settled.iter().chain(filed.iter()) {
        *count.entry(*k).or_default() += 1;
    }
    let twice: Vec<_> = count.iter().filter(|(_, n)| **n > 1).collect();
    assert!(twice.is_empty(), "ended more than once: {twice:?}");
    assert_eq!(count.len(), total, "lost: {} ended", count.len());
    assert_eq!(filed.len(), poison, "{filed:?}");
    let filed: BTreeSet<Key> = filed.into_iter().collect();
    assert_eq!(
        filed,
        *seen_poison.lock().unwrap(),
        "exactly the poison is filed"
    );
}

/// (partition id, offset) of every dead letter of the queue.
async fn dead_letter_keys(b: &TestBroker) -> Vec<Key> {
    b.sql()
        .await
        .query(
            "SELECT partition_id, message_offset FROM queen.dead_letters",
            &[],
        )
        .await
        .expect("dead letters")
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect()
}
