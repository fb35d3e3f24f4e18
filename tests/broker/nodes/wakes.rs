//! Cross-node wakes: a push through one node wakes a consumer parked on another at once when
//! the mesh carries the hint, only at the next reseed when it does not, and again at once
//! after the parked node was killed and restarted.

use std::time::Duration;

use serde_json::json;

use super::cluster::{Options, TestCluster};
use super::{
    cross_node_wakes, first_contact, wait_mesh_connected, MESH_WAKE_AFTER_FAULT, MESH_WAKE_P99,
};
use crate::support::eventually;
use crate::support::fixtures::TIMING;

/// A reseed interval no trial can reach: only a hint can explain a fast wake.
const NO_RESEED_MS: &str = "60000";
/// The cut-mesh floor: a push on another node is seen at the next reseed, then at the parked
/// pop's next in-memory re-poll (backoff capped at `BACKOFF_MAX_MS`).
const CUT_RESEED_MS: u64 = 500;
const BACKOFF_MAX_MS: u64 = 500;
/// Scheduling slack for debug processes on two cores shared with the rest of the suite.
const CUT_SLACK_MS: u64 = 1500;

/// A consumer parked on node B is woken by a push through node A within 50 ms at the p99
/// over 200 trials, and gets exactly the pushed message each time.
#[actix_rt::test]
async fn a_push_through_one_node_wakes_a_consumer_parked_on_another_within_50_ms_at_p99() {
    let _quiet = TIMING.lock().await;
    // Arrange
    let cluster = TestCluster::start(
        2,
        Options::meshed().with("QUEEN_HOTLIST_RESEED_MS", NO_RESEED_MS),
    )
    .await;
    let (a, b) = (cluster.node(0), cluster.node(1));
    a.configure("xwake", json!({})).await;
    first_contact(b, "xwake").await;
    wait_mesh_connected(&cluster).await;

    // Act
    let wakes = cross_node_wakes(
        a,
        b,
        "xwake",
        200,
        Duration::from_secs(5),
        Some(MESH_WAKE_P99),
    )
    .await;

    // Assert
    let (_, p99) = wakes.report("cross-node wake, mesh on");
    assert_eq!(wakes.latencies.len(), 200, "the trials stopped early");
    assert!(
        p99 < MESH_WAKE_P99,
        "cross-node wake p99 {p99:?} (bound {MESH_WAKE_P99:?}): {:?}",
        wakes.latencies
    );
    assert!(a.mesh_counter("hintsSent").await > 0, "node a sent no hint");
    assert!(
        b.mesh_counter("hintsReceived").await > 0,
        "node b received no hint"
    );
}

/// With the mesh cut, a consumer parked on node B still gets a push made through node A,
/// within the reseed interval plus the backoff cap, and clearly slower than the mesh's p99:
/// the mesh, not anything else, is what makes cross-node wakes fast.
#[actix_rt::test]
async fn with_the_mesh_cut_a_push_through_another_node_arrives_only_within_the_reseed_floor() {
    let _quiet = TIMING.lock().await;
    // Arrange
    let cluster = TestCluster::start(
        2,
        Options::cut()
            .with("QUEEN_HOTLIST_RESEED_MS", &CUT_RESEED_MS.to_string())
            .with("POP_WAIT_MAX_INTERVAL_MS", &BACKOFF_MAX_MS.to_string()),
    )
    .await;
    let (a, b) = (cluster.node(0), cluster.node(1));
    a.configure("cutwake", json!({})).await;
    first_contact(b, "cutwake").await;

    // Act
    let wakes = cross_node_wakes(a, b, "cutwake", 10, Duration::from_secs(10), None).await;

    // Assert
    let (p50, _) = wakes.report("cross-node wake, mesh cut");
    let floor = Duration::from_millis(CUT_RESEED_MS + BACKOFF_MAX_MS + CUT_SLACK_MS);
    let worst = wakes.quantile(1.0);
    assert!(
        worst < floor,
        "a delivery took {worst:?}, over the floor {floor:?}: {:?}",
        wakes.latencies
    );
    assert!(
        p50 > MESH_WAKE_P99 * 4,
        "without the mesh the median wake was {p50:?}, not clearly slower than the mesh bound \
         {MESH_WAKE_P99:?}: something other than the mesh wakes node B ({:?})",
        wakes.latencies
    );
}

/// A node killed with SIGKILL and restarted on the same ports rejoins the mesh: its peer
/// counts it connected again and cross-node wakes onto it are fast again.
#[actix_rt::test]
async fn a_node_restarted_after_a_hard_kill_rejoins_the_mesh_and_is_woken_fast_again() {
    let _quiet = TIMING.lock().await;
    // Arrange
    let mut cluster = TestCluster::start(
        2,
        Options::meshed().with("QUEEN_HOTLIST_RESEED_MS", NO_RESEED_MS),
    )
    .await;
    cluster.node(0).configure("rejoin", json!({})).await;
    wait_mesh_connected(&cluster).await;

    // Act
    cluster.kill_hard(1);
    let a = cluster.node(0);
    let noticed = eventually(Duration::from_secs(20), || async {
        (a.mesh_counter("peersConnected").await == 0).then_some(())
    })
    .await;
    cluster.restart(1).await;
    wait_mesh_connected(&cluster).await;
    let (a, b) = (cluster.node(0), cluster.node(1));
    first_contact(b, "rejoin").await;
    let wakes = cross_node_wakes(
        a,
        b,
        "rejoin",
        20,
        Duration::from_secs(5),
        Some(MESH_WAKE_AFTER_FAULT),
    )
    .await;

    // Assert
    assert!(
        noticed.is_some(),
        "node a still counted the killed node b as connected"
    );
    assert_eq!(a.mesh_counter("peersConnected").await, 1);
    let (_, p99) = wakes.report("cross-node wake after restart");
    assert_eq!(wakes.latencies.len(), 20, "the trials stopped early");
    assert!(
        p99 < MESH_WAKE_AFTER_FAULT,
        "after the restart the cross-node wake p99 is {p99:?} (bound {MESH_WAKE_AFTER_FAULT:?}): {:?}",
        wakes.latencies
    );
}
