//! Races between nodes that only a shared database can lose: pushes into many partitions while
//! several consumer groups make their first pops on the same partitions, through every node
//! at once. Correctness under retries is the drain's business ([`super::drain`]); this file
//! pins that the broker never needs those retries.

use serde_json::{json, Value};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use super::cluster::{Options, TestCluster};
use super::node::{client, read};
use crate::support::fixtures::TIMING;

const NODES: usize = 3;
/// Fresh queues, one after the other: each gives every group a new first contact.
const ROUNDS: usize = 5;
const GROUPS: usize = 6;
const PARTITIONS: usize = 30;
/// Push requests per node and round, each one message into every partition, in a rotated order.
const PUSHES_PER_NODE: usize = 4;

/// Pushes into 30 partitions racing the first pops of 4 consumer groups, through 3 nodes at
/// once, never answer a server error: a push's partition lock and a first pop's cursor insert
/// must not deadlock.
#[actix_rt::test]
async fn pushes_racing_first_pops_of_several_groups_through_three_nodes_never_answer_5xx() {
    let _heavy = TIMING.lock().await;
    // Arrange
    let cluster = TestCluster::start(
        NODES,
        Options::meshed().with("QUEEN_HOTLIST_RESEED_MS", "200"),
    )
    .await;
    let bases: Vec<String> = cluster.nodes().iter().map(|n| n.url()).collect();
    let errors = Arc::new(Mutex::new(Vec::<String>::new()));
    let answered = Arc::new(AtomicUsize::new(0));

    for round in 0..ROUNDS {
        // Act: parked first pops of every group on every node, then pushes through every node.
        let queue = format!("race{round}");
        let done = Arc::new(AtomicBool::new(false));
        let consumers: Vec<_> = (0..NODES * GROUPS)
            .map(|k| {
                let path = format!(
                    "/api/v1/pop/queue/{queue}?consumerGroup=g{}&autoAck=true&batch=50\
                     &partitions=8&wait=true&timeout=300",
                    k % GROUPS
                );
                let url = format!("{}{path}", bases[k % NODES]);
                let (done, errors, answered) = (done.clone(), errors.clone(), answered.clone());
                tokio::spawn(async move {
                    let http = client();
                    while !done.load(Ordering::SeqCst) {
                        let response = http.get(&url).send().await.expect("pop reaches a node");
                        let (status, body) = read(response).await;
                        answered.fetch_add(1, Ordering::SeqCst);
                        if status.is_server_error() {
                            errors
                                .lock()
                                .unwrap()
                                .push(format!("pop {url}: {status} {body}"));
                        }
                    }
                })
            })
            .collect();
        let producers: Vec<_> = (0..NODES)
            .map(|n| {
                let (base, queue, errors) = (bases[n].clone(), queue.clone(), errors.clone());
                tokio::spawn(async move {
                    let http = client();
                    for push in 0..PUSHES_PER_NODE {
                        let body = json!({ "items": rotated(&queue, n * PUSHES_PER_NODE + push) });
                        let response = http
                            .post(format!("{base}/api/v1/push"))
                            .json(&body)
                            .send()
                            .await
                            .expect("push reaches a node");
                        let (status, answer) = read(response).await;
                        if !status.is_success() {
                            errors
                                .lock()
                                .unwrap()
                                .push(format!("push {base}: {status} {answer}"));
                        }
                    }
                })
            })
            .collect();
        for p in producers {
            p.await.expect("producer task");
        }
        // The race is over once the pushes are in: stop the pops (each ends within 300 ms).
        done.store(true, Ordering::SeqCst);
        for c in consumers {
            c.await.expect("consumer task");
        }
    }

    // Assert
    let errors = errors.lock().unwrap();
    eprintln!(
        "{} pops answered over {ROUNDS} rounds; {} server errors",
        answered.load(Ordering::SeqCst),
        errors.len()
    );
    assert!(
        errors.is_empty(),
        "{} requests failed with a server error; the first: {}",
        errors.len(),
        errors[0]
    );
}

/// One message into every partition, starting at a partition that depends on `k`.
fn rotated(queue: &str, k: usize) -> Vec<Value> {
    (0..PARTITIONS)
        .map(|j| {
            let p = (j + k * 7) % PARTITIONS;
            json!({ "queue": queue, "partition": format!("p{p}"), "payload": {"k": k, "p": p} })
        })
        .collect()
}
