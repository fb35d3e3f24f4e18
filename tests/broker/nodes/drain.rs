//! A drain across nodes: consumers on every node, producers on every node, one database; the
//! leases in PostgreSQL alone keep every message delivered once. Producers and consumers
//! behave like the SDK: every item carries a client-minted transaction id, and a 5xx answer
//! is retried with the same body. The 5xx answers are counted and printed; that they should
//! not happen at all is pinned by [`super::races`].

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::cluster::{Options, TestCluster};
use super::node::{ack_with, client, messages, read};
use crate::support::fixtures::TIMING;

const NODES: usize = 3;
const CONSUMERS_PER_NODE: usize = 4;
const PARTITIONS: usize = 30;
const PER_PARTITION: usize = 1000;
const TOTAL: usize = PARTITIONS * PER_PARTITION;
/// Items per push request.
const PUSH_BATCH: usize = 500;
/// Long enough for a debug build on two shared cores; a healthy run takes a fraction of it.
const DRAIN_WITHIN: Duration = Duration::from_secs(120);
/// 5xx answers retried over the whole run before one fails the test: the SDK retries them,
/// but a broker that keeps failing is broken, not busy.
const MAX_RETRIES: usize = 50;
const POP: &str = "/api/v1/pop/queue/spread?batch=100&partitions=2&wait=true&timeout=500";

/// 12 consumers, 4 on each of 3 nodes, drain 30,000 messages pushed through all three nodes
/// into 30 partitions, each message exactly once: none missing, none duplicated.
#[actix_rt::test]
async fn twelve_consumers_on_three_nodes_drain_thirty_thousand_messages_exactly_once() {
    let _heavy = TIMING.lock().await;
    // Arrange
    let cluster = TestCluster::start(
        NODES,
        Options::meshed().with("QUEEN_HOTLIST_RESEED_MS", "500"),
    )
    .await;
    cluster.node(0).configure("spread", json!({})).await;
    let bases: Vec<String> = cluster.nodes().iter().map(|n| n.url()).collect();
    let received = Arc::new(AtomicUsize::new(0));
    let retried = Arc::new(AtomicUsize::new(0));
    let deadline = Instant::now() + DRAIN_WITHIN;
    let started = Instant::now();

    // Act: consumers first, so the pushes land while they are parked or busy.
    let consumers: Vec<_> = (0..NODES * CONSUMERS_PER_NODE)
        .map(|c| {
            let base = bases[c % NODES].clone();
            tokio::spawn(consume(base, received.clone(), retried.clone(), deadline))
        })
        .collect();
    let chunks: Vec<Vec<Value>> = items().chunks(PUSH_BATCH).map(<[_]>::to_vec).collect();
    let producers: Vec<_> = (0..NODES)
        .map(|n| {
            let base = bases[n].clone();
            let mine: Vec<Vec<Value>> = chunks.iter().skip(n).step_by(NODES).cloned().collect();
            tokio::spawn(produce(base, mine, retried.clone()))
        })
        .collect();
    for p in producers {
        p.await.expect("producer task");
    }
    let mut got = Vec::new();
    for c in consumers {
        got.extend(c.await.expect("consumer task"));
    }
    let took = started.elapsed();
    let mut leftovers = Vec::new();
    for node in cluster.nodes() {
        leftovers.extend(
            node.pop_messages("/api/v1/pop/queue/spread?batch=100&partitions=30&wait=false")
                .await,
        );
    }

    // Assert
    let mut times: HashMap<(u64, u64), usize> = HashMap::new();
    for (_, key) in &got {
        *times.entry(*key).or_default() += 1;
    }
    let duplicates: usize = times.values().map(|n| n - 1).sum();
    let ids: HashSet<&str> = got.iter().map(|(id, _)| id.as_str()).collect();
    let missing = (0..PARTITIONS as u64)
        .flat_map(|p| (0..PER_PARTITION as u64).map(move |i| (p, i)))
        .filter(|key| !times.contains_key(key))
        .count();
    eprintln!(
        "drained {} deliveries of {TOTAL} messages in {took:?}: {duplicates} duplicates, \
         {missing} missing, {} leftovers, {} 5xx answers retried",
        got.len(),
        leftovers.len(),
        retried.load(Ordering::SeqCst)
    );
    assert_eq!(duplicates, 0, "messages delivered more than once");
    assert_eq!(
        ids.len(),
        got.len(),
        "a message id delivered more than once"
    );
    assert_eq!(missing, 0, "messages never delivered");
    assert_eq!(times.len(), TOTAL, "deliveries of messages never pushed");
    assert!(
        leftovers.is_empty(),
        "still delivered after the drain: {leftovers:?}"
    );
}

/// `{queue, partition, payload: {p, i}, transactionId}` for every message, partitions
/// interleaved.
fn items() -> Vec<Value> {
    let mut items = Vec::with_capacity(TOTAL);
    for i in 0..PER_PARTITION {
        for p in 0..PARTITIONS {
            items.push(json!({
                "queue": "spread",
                "partition": format!("p{p}"),
                "payload": {"p": p, "i": i},
                "transactionId": format!("spread-{p}-{i}"),
            }));
        }
    }
    items
}

/// Pushes chunks through one node with its own client, retrying a 5xx with the same body.
async fn produce(base: String, chunks: Vec<Vec<Value>>, retried: Arc<AtomicUsize>) {
    let http = client();
    for chunk in chunks {
        let body = json!({ "items": chunk });
        let answers = loop {
            let response = http
                .post(format!("{base}/api/v1/push"))
                .json(&body)
                .send()
                .await
                .unwrap_or_else(|e| panic!("push on {base}: {e}"));
            let (status, answer) = read(response).await;
            if status.is_server_error() && retried.fetch_add(1, Ordering::SeqCst) < MAX_RETRIES {
                continue;
            }
            assert!(
                status.is_success(),
                "push on {base} answered {status}: {answer}"
            );
            break answer;
        };
        let answers = answers.as_array().expect("push answers an array");
        assert_eq!(answers.len(), chunk.len());
        // A retried body may meet what a failed attempt stored: `duplicate` is fine then.
        assert!(
            answers
                .iter()
                .all(|a| a["status"] == "queued" || a["status"] == "duplicate"),
            "{answers:?}"
        );
    }
}

/// One consumer on one node with its own client: pops with a lease and acks, until the
/// shared count reaches the total or the deadline; returns (message id, (p, i)) received.
async fn consume(
    base: String,
    received: Arc<AtomicUsize>,
    retried: Arc<AtomicUsize>,
    deadline: Instant,
) -> Vec<(String, (u64, u64))> {
    let http = client();
    let mut got = Vec::new();
    while received.load(Ordering::SeqCst) < TOTAL && Instant::now() < deadline {
        let response = http
            .get(format!("{base}{POP}"))
            .send()
            .await
            .unwrap_or_else(|e| panic!("pop on {base}: {e}"));
        let (status, body) = read(response).await;
        if status.is_server_error() && retried.fetch_add(1, Ordering::SeqCst) < MAX_RETRIES {
            continue;
        }
        let batch = messages(&base, status, &body);
        if batch.is_empty() {
            continue;
        }
        let answers = ack_with(&http, &base, &batch, "completed").await;
        assert!(
            answers.iter().all(|a| a["success"] == true),
            "{base} refused an ack: {answers:?}"
        );
        for m in &batch {
            let id = m["id"].as_str().expect("message id").to_owned();
            let key = (
                m["data"]["p"].as_u64().expect("p"),
                m["data"]["i"].as_u64().expect("i"),
            );
            got.push((id, key));
        }
        received.fetch_add(batch.len(), Ordering::SeqCst);
    }
    got
}
