//! Partition discovery across nodes: writers push through two broker processes on one
//! database while a reader follows `POST /api/v1/partitions/changed` from node to node,
//! each pass with `since` = the previous pass's `safeTime`. No pass may skip a write: when
//! the writers stop, every partition's newest offset has been listed by some pass.

use std::collections::{BTreeMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};

use super::cluster::{Options, TestCluster};
use super::node::Node;

const PARTITIONS: usize = 40;
/// Writer tasks per node.
const WRITERS: usize = 3;
/// Partitions each push writes at once (a longer transaction than a one-partition push).
const PER_PUSH: usize = 5;
/// How long the writers write.
const WRITE_FOR: Duration = Duration::from_secs(5);

/// One pass: every page of partitions written since `since`, through `node`; the pass's
/// smallest safeTime and each listed partition's lastOffset. Asserts no partition is listed
/// twice within the pass.
async fn pass(node: &Node, since: Option<&str>) -> (String, Vec<(String, i64)>) {
    let mut after = Value::Null;
    let mut safe: Option<String> = None;
    let mut listed = Vec::new();
    let mut names = HashSet::new();
    loop {
        let mut entry = json!({"queue": "disc", "limit": 7, "after": after});
        if let Some(since) = since {
            entry["since"] = json!(since);
        }
        let (status, body) = node
            .post("/api/v1/partitions/changed", &json!({"entries": [entry]}))
            .await;
        assert!(status.is_success(), "node {}: {status} {body}", node.id);
        let page_safe = body["safeTime"].as_str().expect("safeTime").to_owned();
        // The client keeps the smallest safeTime of a pass, by string comparison.
        if safe.as_ref().map_or(true, |s| page_safe < *s) {
            safe = Some(page_safe);
        }
        let entry = &body["entries"][0];
        for p in entry["partitions"].as_array().into_iter().flatten() {
            let name = p["name"].as_str().expect("a name").to_owned();
            assert!(
                names.insert(name.clone()),
                "{name} listed twice in one pass"
            );
            listed.push((name, p["lastOffset"].as_i64().expect("lastOffset")));
        }
        match &entry["next"] {
            Value::String(next) => after = json!(next),
            _ => break,
        }
    }
    (safe.expect("at least one page"), listed)
}

/// The walk (see the module header).
#[actix_rt::test]
async fn changed_passes_following_safe_time_never_skip_a_partition_written_through_another_node() {
    // Arrange
    let cluster = TestCluster::start(2, Options::cut()).await;
    let stop = Arc::new(AtomicBool::new(false));
    let pushes = Arc::new(AtomicUsize::new(0));
    let mut writers = Vec::new();
    for n in 0..2 {
        for w in 0..WRITERS {
            let url = cluster.node(n).url_of("/api/v1/push");
            let http = cluster.node(n).http.clone();
            let (stop, pushes) = (stop.clone(), pushes.clone());
            writers.push(tokio::spawn(async move {
                let mut k = n * 17 + w * 5;
                while !stop.load(Ordering::Relaxed) {
                    let items: Vec<Value> = (0..PER_PUSH)
                        .map(|j| {
                            let p = (k + j * 7) % PARTITIONS;
                            json!({"queue": "disc", "partition": format!("p{p:02}"), "payload": k})
                        })
                        .collect();
                    k += 3;
                    let r = http.post(&url).json(&json!({"items": items})).send().await;
                    let ok = r.map(|r| r.status().is_success()).unwrap_or(false);
                    assert!(ok, "a push through node {n} failed");
                    pushes.fetch_add(1, Ordering::Relaxed);
                }
            }));
        }
    }

    // Act: passes from node to node while the writers write, then one after they stopped.
    let mut seen: BTreeMap<String, i64> = BTreeMap::new();
    let mut since: Option<String> = None;
    let started = tokio::time::Instant::now();
    let mut passes = 0;
    let mut last = false;
    loop {
        if started.elapsed() >= WRITE_FOR && !last {
            stop.store(true, Ordering::Relaxed);
            for w in writers.drain(..) {
                w.await.expect("a writer");
            }
            last = true;
        }
        let (safe, listed) = pass(cluster.node(passes % 2), since.as_deref()).await;
        passes += 1;
        for (name, offset) in listed {
            let top = seen.entry(name).or_insert(-1);
            *top = (*top).max(offset);
        }
        since = Some(safe);
        if last {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    // Assert: every partition's newest offset was listed by some pass.
    let truth: BTreeMap<String, i64> = cluster
        .sql()
        .await
        .query(
            "SELECT p.name, p.last_offset FROM queen.log_partitions p
             JOIN queen.queues q ON q.id = p.queue_id WHERE q.name = 'disc'",
            &[],
        )
        .await
        .expect("read the partitions")
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect();
    assert_eq!(truth.len(), PARTITIONS);
    assert!(
        pushes.load(Ordering::Relaxed) > 20,
        "the writers barely wrote"
    );
    assert!(passes > 5, "only {passes} passes");
    let missed: Vec<String> = truth
        .iter()
        .filter(|(name, offset)| seen.get(*name) != Some(offset))
        .map(|(name, offset)| format!("{name}: newest {offset}, listed {:?}", seen.get(name)))
        .collect();
    assert!(
        missed.is_empty(),
        "writes skipped by {passes} passes:\n{}",
        missed.join("\n")
    );
    drop(cluster);
}
