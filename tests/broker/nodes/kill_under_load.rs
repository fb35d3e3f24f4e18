//! A node killed with SIGKILL in the middle of load and started again: producers push
//! through all three nodes (a failed push is re-sent unchanged to the next node, as the
//! multi-URL client does), leased consumers pop and ack on each node, and node C dies with
//! pushes, pops and acks in flight. Nothing answered as stored is lost, a push re-sent after
//! its first try committed answers `duplicate` on another node, and a message comes twice
//! only when an ack of it failed (its lease expired).

use std::time::{Duration, Instant};

use serde_json::json;

use super::cluster::{Options, TestCluster};
use crate::support::load::{Load, NO_ANSWER};

const QUEUE: &str = "kill-load";
/// Short, so what the killed node leased comes back within the test.
const LEASE_SECS: u64 = 3;

#[actix_rt::test]
async fn a_node_killed_and_restarted_under_load_loses_nothing_and_repeats_only_failed_acks() {
    // Arrange
    let mut cluster =
        TestCluster::start(3, Options::meshed().with("QUEEN_HOTLIST_RESEED_MS", "500")).await;
    cluster
        .node(0)
        .configure(QUEUE, json!({ "leaseTime": LEASE_SECS }))
        .await;
    let urls = cluster.nodes().iter().map(|n| n.url()).collect();
    let load = Load::new(urls, QUEUE, 12, 10);
    let running = load.start(3, 3);
    tokio::time::sleep(Duration::from_millis(1500)).await;

    // Act: node C dies with work in flight, stays dead a second, and starts again.
    let killed_at = Instant::now();
    cluster.kill_hard(2);
    tokio::time::sleep(Duration::from_secs(1)).await;
    cluster.restart(2).await;
    let back_at = Instant::now();
    tokio::time::sleep(Duration::from_secs(2)).await;
    let stored = running.finish().await;

    // Assert
    eprintln!(
        "stored {} messages; C was down {:?}; failures: {:?}",
        stored.len(),
        back_at - killed_at,
        load.failures.summary()
    );
    load.failures.with(|failures| {
        assert!(
            failures.iter().any(|f| f.status == NO_ANSWER),
            "no request met the dead node"
        );
        let bad: Vec<_> = failures
            .iter()
            .filter(|f| f.status != NO_ANSWER)
            .map(|f| format!("{}: {} {}", f.what, f.status, f.body))
            .collect();
        assert!(bad.is_empty(), "failures other than the dead node: {bad:?}");
        let late: Vec<_> = failures
            .iter()
            .filter(|f| f.sent > back_at)
            .map(|f| format!("{}: {} {}", f.what, f.status, f.body))
            .collect();
        assert!(
            late.is_empty(),
            "requests failed after the restart: {late:?}"
        );
    });
}
