//! Timers across two broker processes sharing one database: both fire, and one killed
//! with SIGKILL while they fire leaves its timers to the other: every timer is delivered
//! exactly once.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use base64::Engine;
use serde_json::{json, Value};

use super::cluster::{Options, TestCluster};

const TIMERS: usize = 4_000;

#[actix_rt::test]
async fn a_node_killed_while_firing_leaves_its_timers_to_the_other_and_each_fires_once() {
    let mut cluster = TestCluster::start(2, Options::meshed()).await;
    // Dedup off: a timer fired twice must show as two messages, not one and a duplicate.
    cluster
        .node(0)
        .configure("killed-timers", json!({"dedupWindowSeconds": 0}))
        .await;
    let started = Instant::now();
    for chunk in 0..TIMERS / 100 {
        let ops: Vec<Value> = (chunk * 100..chunk * 100 + 100)
            .map(|k| {
                let payload =
                    base64::engine::general_purpose::STANDARD.encode(json!(k).to_string());
                // Due over about three seconds from now, on both nodes' loops.
                json!({"op": "schedule", "queue": "killed-timers", "timerKey": format!("k{k}"),
                       "payload": payload, "txn": format!("t{k}"),
                       "delayMs": 1000 + (k * 3000 / TIMERS) as i64})
            })
            .collect();
        let node = cluster.node(chunk % 2);
        let (status, body) = node
            .post("/api/v1/timers", &json!({"operations": ops}))
            .await;
        assert!(status.is_success(), "{body}");
    }
    // Kill the second node in the middle of the firing.
    let kill_at = Duration::from_millis(2500);
    tokio::time::sleep(kill_at.saturating_sub(started.elapsed())).await;
    let fired_before_kill = cluster.node(1).counter("/timers/fired").await;
    cluster.kill_hard(1);

    let survivor = cluster.node(0);
    let mut got: BTreeMap<String, usize> = BTreeMap::new();
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut quiet_since = Instant::now();
    while Instant::now() < deadline && quiet_since.elapsed() < Duration::from_secs(3) {
        let batch = survivor
            .pop_messages("/api/v1/pop/queue/killed-timers?batch=1000&wait=true&timeout=300")
            .await;
        if batch.is_empty() {
            continue;
        }
        survivor.ack_all(&batch, "completed").await;
        for m in &batch {
            *got.entry(m["transactionId"].as_str().unwrap_or_default().to_owned())
                .or_default() += 1;
        }
        quiet_since = Instant::now();
    }

    let twice: Vec<_> = got.iter().filter(|(_, n)| **n > 1).collect();
    assert!(
        twice.is_empty(),
        "{} fired more than once, e.g. {:?}",
        twice.len(),
        &twice[..twice.len().min(5)]
    );
    assert_eq!(got.len(), TIMERS, "every timer fired once");
    assert!(fired_before_kill > 0, "the killed node had not fired yet");
    let left: i64 = cluster
        .sql()
        .await
        .query_one("SELECT count(*) FROM queen.timers", &[])
        .await
        .expect("count")
        .get(0);
    assert_eq!(left, 0);
}
