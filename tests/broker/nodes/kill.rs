//! A node killed while it holds leases: its leases are rows in PostgreSQL with an expiry, so
//! when they run out the surviving nodes deliver what the dead node never acked.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::cluster::{Options, TestCluster};

const PARTITIONS: usize = 10;
const PER_PARTITION: usize = 20;
/// Short, so the test waits for the expiry only briefly; long enough that C's leases are
/// still live when it is killed.
const LEASE_SECS: u64 = 2;

/// Killing a node with SIGKILL while it holds leases on unacked batches loses nothing: after
/// the leases expire, consumers on the two other nodes get exactly the pushed set, once each.
#[actix_rt::test]
async fn a_node_killed_while_holding_leases_loses_nothing_and_the_others_deliver_every_message() {
    // Arrange
    let mut cluster =
        TestCluster::start(3, Options::meshed().with("QUEEN_HOTLIST_RESEED_MS", "500")).await;
    let (a, c) = (cluster.node(0), cluster.node(2));
    a.configure("killed", json!({ "leaseTime": LEASE_SECS }))
        .await;
    let mut items = Vec::new();
    for i in 0..PER_PARTITION {
        for p in 0..PARTITIONS {
            items.push(json!({
                "queue": "killed",
                "partition": format!("p{p}"),
                "payload": {"p": p, "i": i},
            }));
        }
    }
    a.push_items(&items).await;
    let pushed: BTreeSet<(u64, u64)> = (0..PARTITIONS as u64)
        .flat_map(|p| (0..PER_PARTITION as u64).map(move |i| (p, i)))
        .collect();
    // C pops batches, never acking, until every partition is leased to it.
    let mut held = Vec::new();
    for _ in 0..PARTITIONS * PER_PARTITION {
        let got = c
            .pop_messages("/api/v1/pop/queue/killed?batch=15&partitions=3&wait=false")
            .await;
        if got.is_empty() {
            break;
        }
        held.extend(got.iter().map(pair));
    }
    assert!(!held.is_empty(), "node c got nothing to hold");

    // Act
    let killed_at = Instant::now();
    cluster.kill_hard(2);
    let survivors = [cluster.node(0), cluster.node(1)];
    let mut got: Vec<(u64, u64)> = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut turn = 0;
    while got.len() < pushed.len() && Instant::now() < deadline {
        let node = survivors[turn % 2];
        turn += 1;
        let batch = node
            .pop_messages("/api/v1/pop/queue/killed?batch=40&partitions=4&wait=true&timeout=1000")
            .await;
        if batch.is_empty() {
            continue;
        }
        let answers = node.ack_all(&batch, "completed").await;
        assert!(
            answers.iter().all(|a| a["success"] == true),
            "node {} refused an ack: {answers:?}",
            node.id
        );
        got.extend(batch.iter().map(pair));
    }
    let drained_after = killed_at.elapsed();

    // Assert
    eprintln!(
        "node c held {} messages when killed; the survivors delivered {} in {drained_after:?}",
        held.len(),
        got.len()
    );
    let mut times: BTreeMap<(u64, u64), usize> = BTreeMap::new();
    for m in &got {
        *times.entry(*m).or_default() += 1;
    }
    let duplicates: Vec<_> = times.iter().filter(|(_, n)| **n > 1).collect();
    let delivered: BTreeSet<(u64, u64)> = times.keys().copied().collect();
    let missing: Vec<_> = pushed.difference(&delivered).collect();
    let unknown: Vec<_> = delivered.difference(&pushed).collect();
    assert!(
        missing.is_empty(),
        "{} messages lost: {missing:?}",
        missing.len()
    );
    assert!(duplicates.is_empty(), "delivered twice: {duplicates:?}");
    assert!(unknown.is_empty(), "never pushed: {unknown:?}");
    assert!(
        held.iter().all(|m| delivered.contains(m)),
        "a message node c held was not delivered again"
    );
}

/// `(partition, sequence)` of a popped message.
fn pair(m: &Value) -> (u64, u64) {
    (
        m["data"]["p"].as_u64().expect("p"),
        m["data"]["i"].as_u64().expect("i"),
    )
}
