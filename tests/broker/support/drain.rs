//! Exactly-once drains: fill partitions with numbered messages, consume them with many
//! concurrent consumers, and check the result for losses, duplicates and order.

use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::json;

use super::TestBroker;

/// Pushes `per_partition` messages to each of `partitions` partitions (`p0`, `p1`, ...),
/// payload `{"p": partition, "i": sequence}`, 500 items per request.
pub async fn fill(b: &TestBroker, queue: &str, partitions: usize, per_partition: usize) {
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
        let (status, body) = b.post("/api/v1/push", &json!({ "items": chunk })).await;
        assert!(status.is_success(), "push answered {status}: {body}");
    }
}

/// One consumer: pops `path` and acks (for `group`) until the shared count reaches `total`
/// or the deadline; returns the (partition, sequence) pairs in the order received.
pub async fn consume(
    b: Arc<TestBroker>,
    path: String,
    group: Option<&'static str>,
    seen: Arc<AtomicUsize>,
    total: usize,
    deadline: Instant,
) -> Vec<(u64, u64)> {
    let mut got = Vec::new();
    while seen.load(Ordering::SeqCst) < total && Instant::now() < deadline {
        let (status, body) = b.get(&path).await;
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
        let answers = b.ack_all(&messages, "completed", group).await;
        assert!(
            answers.iter().all(|a| a["success"] == true),
            "an ack was refused: {answers:?}"
        );
        seen.fetch_add(messages.len(), Ordering::SeqCst);
    }
    got
}

/// Drains `total` messages from `path` with `consumers` concurrent queue-mode consumers;
/// returns each one's stream and asserts the count was reached within `within`.
pub async fn drain(
    b: Arc<TestBroker>,
    path: &str,
    consumers: usize,
    total: usize,
    within: Duration,
) -> Vec<Vec<(u64, u64)>> {
    let seen = Arc::new(AtomicUsize::new(0));
    let deadline = Instant::now() + within;
    let tasks: Vec<_> = (0..consumers)
        .map(|_| {
            tokio::spawn(consume(
                b.clone(),
                path.to_owned(),
                None,
                seen.clone(),
                total,
                deadline,
            ))
        })
        .collect();
    let mut all = Vec::new();
    for t in tasks {
        all.push(t.await.expect("consumer task"));
    }
    assert_eq!(
        seen.load(Ordering::SeqCst),
        total,
        "{path}: not drained in time"
    );
    all
}

/// Every message exactly once, and in order within its partition in each consumer's
/// stream; returns the set of (partition, sequence) delivered.
pub fn assert_exactly_once_in_order(
    label: &str,
    all: &[Vec<(u64, u64)>],
    partitions: u64,
    per_partition: u64,
) -> BTreeSet<(u64, u64)> {
    let mut per: HashMap<u64, Vec<u64>> = HashMap::new();
    for consumer in all {
        let mut last: HashMap<u64, u64> = HashMap::new();
        for &(p, i) in consumer {
            if let Some(prev) = last.insert(p, i) {
                assert!(
                    i > prev,
                    "{label}: partition {p}: {i} after {prev} in one consumer"
                );
            }
            per.entry(p).or_default().push(i);
        }
    }
    assert_eq!(
        per.len() as u64,
        partitions,
        "{label}: some partition delivered nothing"
    );
    let mut set = BTreeSet::new();
    for (p, mut got) in per {
        got.sort_unstable();
        let want: Vec<u64> = (0..per_partition).collect();
        assert_eq!(
            got, want,
            "{label}: partition {p}: lost or duplicated messages"
        );
        set.extend(got.into_iter().map(|i| (p, i)));
    }
    set
}
