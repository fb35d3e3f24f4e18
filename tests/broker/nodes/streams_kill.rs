//! A broker SIGKILLed during streams cycles: two runners (one per node) pop a source queue
//! and commit cycles (sink pushes + ack of the batch, `POST /streams/v1/cycle`); node 1 is
//! killed while its runner is mid-stream, its leases expire, and node 0's runner takes its
//! partitions over. The sink then holds every source message's result exactly once: a cycle
//! cut by the kill committed whole or not at all, and a committed one is never redone.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::cluster::{Options, TestCluster};

const PARTITIONS: usize = 8;
const PER_PARTITION: usize = 60;
const LEASE_SECS: u64 = 2;

/// One runner: pops `src` through `url` and commits a cycle per partition, until the
/// source stays empty for `quiet` or a call fails (its node is gone). Counts cycles.
async fn runner(url: String, query: String, cycles: Arc<AtomicUsize>, quiet: Duration) {
    let http = super::node::client();
    let pop = format!(
        "{url}/api/v1/pop/queue/src?consumerGroup=streams.q&batch=7&partitions=2&wait=false"
    );
    let mut empty_since = Instant::now();
    loop {
        let Ok(answer) = http.get(&pop).send().await else {
            return;
        };
        let body: Value = answer.json().await.unwrap_or(Value::Null);
        let messages = body["messages"].as_array().cloned().unwrap_or_default();
        if messages.is_empty() {
            if empty_since.elapsed() > quiet {
                return;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
            continue;
        }
        empty_since = Instant::now();
        let mut by_partition: BTreeMap<String, Vec<Value>> = BTreeMap::new();
        for m in messages {
            by_partition
                .entry(m["partitionId"].as_str().unwrap_or_default().to_owned())
                .or_default()
                .push(m);
        }
        for (pid, batch) in by_partition {
            let last = &batch[batch.len() - 1];
            let pushes: Vec<Value> = batch
                .iter()
                .map(
                    |m| json!({"queue": "sink", "partition": m["partition"], "payload": m["data"]}),
                )
                .collect();
            let cycle = json!({
                "query_id": query, "partition_id": pid, "consumer_group": "streams.q",
                "state_ops": [], "push_items": pushes,
                "ack": {"transactionId": last["transactionId"], "leaseId": last["leaseId"],
                        "status": "completed", "count": batch.len()},
                "release_lease": true,
            });
            if http
                .post(format!("{url}/streams/v1/cycle"))
                .json(&cycle)
                .send()
                .await
                .is_err()
            {
                return;
            }
            cycles.fetch_add(1, Ordering::SeqCst);
        }
    }
}

#[actix_rt::test]
async fn a_node_killed_during_cycles_leaves_every_result_in_the_sink_exactly_once() {
    // Arrange
    let mut cluster = TestCluster::start(2, Options::meshed()).await;
    let a = cluster.node(0);
    a.configure("src", json!({ "leaseTime": LEASE_SECS })).await;
    let mut items = Vec::new();
    for i in 0..PER_PARTITION {
        for p in 0..PARTITIONS {
            items.push(json!({"queue": "src", "partition": format!("p{p}"),
                              "payload": {"p": p, "i": i}}));
        }
    }
    a.push_items(&items).await;
    let (status, registered) = a
        .post(
            "/streams/v1/queries",
            &json!({"name": "q", "source_queue": "src", "sink_queue": "sink",
                    "config_hash": "h"}),
        )
        .await;
    assert!(status.is_success(), "{registered}");
    let query = registered["query_id"]
        .as_str()
        .expect("query_id")
        .to_owned();

    // Act: both runners go; node 1 dies once its runner has committed some cycles.
    let (a_cycles, b_cycles) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let quiet = Duration::from_secs(LEASE_SECS * 3);
    let survivor = tokio::spawn(runner(
        cluster.node(0).url(),
        query.clone(),
        a_cycles.clone(),
        quiet,
    ));
    let victim = tokio::spawn(runner(
        cluster.node(1).url(),
        query.clone(),
        b_cycles.clone(),
        quiet,
    ));
    let deadline = Instant::now() + Duration::from_secs(30);
    while b_cycles.load(Ordering::SeqCst) < 5 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert!(
        b_cycles.load(Ordering::SeqCst) >= 5,
        "node 1's runner never got going"
    );
    cluster.kill_hard(1);
    victim.await.expect("the victim's runner ends");
    survivor.await.expect("the survivor's runner ends");

    // Assert: every result once, through a group that never read the sink.
    let a = cluster.node(0);
    let mut got: BTreeMap<(u64, u64), usize> = BTreeMap::new();
    loop {
        let batch = a
            .pop_messages("/api/v1/pop/queue/sink?consumerGroup=check&autoAck=true&batch=1000")
            .await;
        if batch.is_empty() {
            break;
        }
        for m in batch {
            let key = (
                m["data"]["p"].as_u64().expect("p"),
                m["data"]["i"].as_u64().expect("i"),
            );
            *got.entry(key).or_default() += 1;
        }
    }
    let twice: Vec<_> = got.iter().filter(|(_, n)| **n > 1).collect();
    assert!(
        twice.is_empty(),
        "results in the sink more than once: {twice:?}"
    );
    assert_eq!(
        got.len(),
        PARTITIONS * PER_PARTITION,
        "every result in the sink (survivor cycles {}, victim cycles {})",
        a_cycles.load(Ordering::SeqCst),
        b_cycles.load(Ordering::SeqCst)
    );
}
