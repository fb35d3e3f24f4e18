//! The hot-list and legacy paths deliver exactly once, and in partition order, under
//! concurrent consumers.

use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::json;

use crate::support::fixtures::{count, metrics, TIMING};
use crate::support::TestBroker;

/// The hot-list and the legacy paths deliver the same messages, exactly once and in
/// partition order, under 16 concurrent consumers.
#[actix_rt::test]
async fn the_hotlist_and_legacy_paths_deliver_the_same_messages_exactly_once_to_sixteen_consumers()
{
    let _quiet = TIMING.lock().await;
    // Arrange
    let (partitions, per_partition) = (64usize, 60usize);
    let total = partitions * per_partition;
    let hot = Arc::new(TestBroker::start_with(&[("DB_POOL_SIZE", "24")]).await);
    let legacy =
        Arc::new(TestBroker::start_with(&[("DB_POOL_SIZE", "24"), ("QUEEN_HOTLIST", "0")]).await);
    fill(&hot, "same", partitions, per_partition).await;
    fill(&legacy, "same", partitions, per_partition).await;

    // Act
    let (hot_streams, legacy_streams) = tokio::join!(
        drain(hot.clone(), "same", 16, total),
        drain(legacy.clone(), "same", 16, total)
    );

    // Assert
    let hot_set = assert_exactly_once_in_order(
        "hot-list",
        &hot_streams,
        partitions as u64,
        per_partition as u64,
    );
    let legacy_set = assert_exactly_once_in_order(
        "legacy",
        &legacy_streams,
        partitions as u64,
        per_partition as u64,
    );
    assert_eq!(hot_set, legacy_set);
    for b in [&hot, &legacy] {
        let left = b.pop_messages("/api/v1/pop/queue/same?batch=10").await;
        assert!(left.is_empty(), "messages left after the drain: {left:?}");
    }
    let (hm, lm) = (metrics(&hot).await, metrics(&legacy).await);
    assert!(
        count(&hm, "/sql/list") > 0 && count(&hm, "/pops/fromRing") > 0,
        "the hot-list broker did not serve from its ring: {hm}"
    );
    assert_eq!(
        count(&lm, "/sql/list"),
        0,
        "the legacy broker used the ring: {lm}"
    );
}

/// Pushes `per_partition` messages to each of `partitions` partitions, payload `{"p":..,"i":..}`.
async fn fill(b: &TestBroker, queue: &str, partitions: usize, per_partition: usize) {
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

/// One consumer: pops and acks until the shared count reaches `total` or the deadline.
async fn consume(
    b: Arc<TestBroker>,
    path: String,
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
        let answers = b.ack_all(&messages, "completed", None).await;
        assert!(
            answers.iter().all(|a| a["success"] == true),
            "an ack was refused: {answers:?}"
        );
        seen.fetch_add(messages.len(), Ordering::SeqCst);
    }
    got
}

/// Drains a filled queue with `consumers` concurrent consumers; returns each one's stream.
async fn drain(
    b: Arc<TestBroker>,
    queue: &str,
    consumers: usize,
    total: usize,
) -> Vec<Vec<(u64, u64)>> {
    let seen = Arc::new(AtomicUsize::new(0));
    let deadline = Instant::now() + Duration::from_secs(60);
    let path = format!("/api/v1/pop/queue/{queue}?batch=20&partitions=2&wait=true&timeout=500");
    let tasks: Vec<_> = (0..consumers)
        .map(|_| {
            tokio::spawn(consume(
                b.clone(),
                path.clone(),
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
    assert_eq!(seen.load(Ordering::SeqCst), total, "{queue}: not drained");
    all
}

/// Every message exactly once, and in order within its partition in each consumer's stream.
fn assert_exactly_once_in_order(
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
        assert_eq!(got, want, "{label}: partition {p}: lost or duplicated");
        set.extend(got.into_iter().map(|i| (p, i)));
    }
    set
}
