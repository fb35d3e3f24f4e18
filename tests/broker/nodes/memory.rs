//! Bounded memory: a client that pops 100,000 distinct queue names and as many distinct
//! consumer groups makes the broker start that many group actors; with an idle stop of
//! 20 s (`QUEEN_GROUP_IDLE_STOP_MS`) thousands are alive at once, then they all stop and
//! the process's resident memory comes back to where it was. Measured on the real binary
//! (its allocator is the product's).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::cluster::{Options, TestCluster};
use super::node::Node;
use crate::support::eventually;
use crate::support::fixtures::TIMING;

/// Distinct names popped: the 100,000, half queues and half groups of one queue.
const NAMES: usize = 100_000;
/// Concurrent clients.
const CLIENTS: usize = 32;
/// How far above the baseline the resident memory may stay once idle: the pool's prepared
/// statements and HTTP buffers may grow once. The allocator's emptied pages are handed back
/// as the actors stop (`src/actors/heap_return.rs`); without that, the process stayed
/// 11-61 MB above its baseline after 30,000 actors stopped at once. Collecting only every
/// 256 stops left it 10 MB above once in a full CI run; collecting also at each thread's
/// last stop settled it at the baseline.
const SLACK_BYTES: u64 = 8 * 1024 * 1024;

/// 100,000 pops of distinct names start 100,000 group actors; a few minutes later none is
/// left and the resident memory is back within a few MB of the baseline.
#[actix_rt::test]
async fn popping_a_hundred_thousand_distinct_names_leaves_memory_where_it_was() {
    // Arrange: a node whose idle actors stop after one second, warmed up.
    let cluster = TestCluster::start(
        1,
        Options::cut()
            .with("QUEEN_GROUP_IDLE_STOP_MS", "20000")
            .with("DB_POOL_SIZE", "16"),
    )
    .await;
    let first = cluster.node(0);
    let node = Arc::new(Node::new(
        first.id.clone(),
        first.http_port,
        first.mesh_port,
    ));
    let pid = cluster.pid(0);
    // The pops keep both cores busy: the timing tests wait for them (the lock is not held
    // while the actors idle out, minutes of waiting that load nothing).
    {
        let _heavy = TIMING.lock().await;
        pop_names(&node, "warm", 5_000).await;
    }
    until_no_actors(&node).await;
    let baseline = rss(pid);

    // Act
    let (peak, alive, popped_in) = {
        let _heavy = TIMING.lock().await;
        let started = Instant::now();
        pop_names(&node, "mem", NAMES).await;
        let peak = rss(pid);
        let alive = node.metrics().await["caches"]["groupActors"]
            .as_u64()
            .unwrap_or(0);
        (peak, alive, started.elapsed())
    };
    until_no_actors(&node).await;
    let settled = eventually(Duration::from_secs(180), || async {
        let now = rss(pid);
        tokio::time::sleep(Duration::from_millis(500)).await;
        (now <= baseline + SLACK_BYTES).then_some(now)
    })
    .await;

    // Assert
    eprintln!(
        "rss: baseline {} MB, after {NAMES} distinct names {} MB with {alive} actors alive (popped in {:.0?}), settled {:?} MB",
        baseline >> 20,
        peak >> 20,
        popped_in,
        settled.map(|b| b >> 20)
    );
    assert!(alive > 1_000, "only {alive} actors were alive at once");
    assert!(
        settled.is_some(),
        "rss stayed at {} MB, baseline {} MB",
        rss(pid) >> 20,
        baseline >> 20
    );
}

/// Pops `n` distinct names: `{prefix}-q-{i}` queues for even i, groups `{prefix}-g-{i}` of
/// the queue `{prefix}-shared` for odd i.
async fn pop_names(node: &Arc<Node>, prefix: &'static str, n: usize) {
    let next = Arc::new(AtomicUsize::new(0));
    let tasks: Vec<_> = (0..CLIENTS)
        .map(|_| {
            let (node, next) = (node.clone(), next.clone());
            tokio::spawn(async move {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= n {
                        return;
                    }
                    let path = if i % 2 == 0 {
                        format!("/api/v1/pop/queue/{prefix}-q-{i}?batch=1")
                    } else {
                        format!("/api/v1/pop/queue/{prefix}-shared?batch=1&consumerGroup={prefix}-g-{i}")
                    };
                    let (status, body) = node.get(&path).await;
                    assert!(status.is_success(), "pop answered {status}: {body}");
                }
            })
        })
        .collect();
    for t in tasks {
        t.await.expect("client task");
    }
}

async fn until_no_actors(node: &Node) {
    let none = eventually(Duration::from_secs(90), || async {
        let m = node.metrics().await;
        m["groups"]
            .as_array()
            .is_some_and(|g| g.is_empty())
            .then_some(())
    })
    .await;
    assert!(none.is_some(), "group actors did not stop when idle");
}

/// Resident memory of a process, bytes.
fn rss(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("proc status");
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map(|kb| kb * 1024)
        .expect("VmRSS in proc status")
}
