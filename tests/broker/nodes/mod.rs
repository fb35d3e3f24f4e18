//! Multi-node tests: brokers run as separate `queen` processes over one PostgreSQL database,
//! with or without the peer mesh between them, and the tests kill, restart and confuse them.
//!
//! [`cluster`] owns the processes, [`node`] talks HTTP to one of them; this file keeps what
//! several test files share: waiting for the mesh, parking a pop, and the cross-node wake
//! trials with their percentiles. Single-process behaviour stays in the other test files.

pub(crate) mod cluster;
pub(crate) mod node;

mod acks;
mod changed;
mod drain;
mod fault_run;
mod garbage;
mod kill;
mod kill_under_load;
mod memory;
mod races;
mod spool_kill;
mod streams_kill;
mod tenants;
mod timers;
mod wakes;

use std::time::{Duration, Instant};

use serde_json::json;

use crate::support::eventually;
use crate::support::fixtures::spawn_get_with;
use cluster::TestCluster;
use node::{messages, Node};

/// The p99 a cross-node wake must beat with the mesh: a hint is one loopback frame, so the
/// wake costs about what a local push wake costs, far below any backoff or reseed interval.
pub const MESH_WAKE_P99: Duration = Duration::from_millis(50);

/// The bound on every wake of the short after-a-fault checks (20 trials, so the p99 is the
/// worst trial): still two orders of magnitude under the 60 s reseed that is the only other
/// way those wakes could happen, and loose enough that one scheduler stall on a loaded
/// two-core machine does not fail them. The 200-trial test carries the 50 ms target.
pub const MESH_WAKE_AFTER_FAULT: Duration = Duration::from_millis(500);

/// How long the nodes of a meshed cluster may take to find each other.
const MESH_CONNECT_WITHIN: Duration = Duration::from_secs(20);

/// Waits until every running node of the cluster reports all its peers connected.
pub async fn wait_mesh_connected(cluster: &TestCluster) {
    let peers = cluster.nodes().len() as i64 - 1;
    for node in cluster.nodes() {
        let connected = eventually(MESH_CONNECT_WITHIN, || async {
            (node.mesh_counter("peersConnected").await == peers).then_some(())
        })
        .await;
        assert!(
            connected.is_some(),
            "node {} never saw its {peers} peers connected: {}",
            node.id,
            node.mesh().await
        );
    }
}

/// The group's first contact on a node, done and settled: the SQL seed, then one more pop for
/// the reseed that follows it, so later pops are planned from the ring.
pub async fn first_contact(node: &Node, queue: &str) {
    for _ in 0..2 {
        let got = node
            .pop_messages(&format!("/api/v1/pop/queue/{queue}"))
            .await;
        assert!(got.is_empty(), "first contact found messages: {got:?}");
    }
}

/// Waits until at least `n` pops are parked on a node.
pub async fn wait_parked(node: &Node, n: i64) {
    let parked = eventually(Duration::from_secs(10), || async {
        (node.counter("/pops/parked").await >= n).then_some(())
    })
    .await;
    assert!(
        parked.is_some(),
        "{n} pops never parked on node {}: {}",
        node.id,
        node.metrics().await
    );
}

/// What a run of cross-node wake trials measured.
pub struct Wakes {
    /// Push sent → pop answered, one per completed trial, in trial order.
    pub latencies: Vec<Duration>,
    /// Trials asked for (more than were run when the run stopped early).
    pub asked: usize,
}

impl Wakes {
    /// The q-quantile (nearest rank) of the completed trials.
    pub fn quantile(&self, q: f64) -> Duration {
        let mut sorted = self.latencies.clone();
        sorted.sort_unstable();
        let rank = ((q * sorted.len() as f64).ceil() as usize).max(1);
        sorted[rank - 1]
    }

    /// Prints and returns (p50, p99).
    pub fn report(&self, label: &str) -> (Duration, Duration) {
        let (p50, p99) = (self.quantile(0.50), self.quantile(0.99));
        eprintln!(
            "{label}: {} of {} trials, p50 {p50:?}, p99 {p99:?}, max {:?}",
            self.latencies.len(),
            self.asked,
            self.quantile(1.0)
        );
        (p50, p99)
    }
}

/// Runs `trials` rounds of: park a pop on `to`, push one message through `from`, and time
/// push-sent → pop-answered; asserts every pop got exactly the message pushed in its round.
/// With `stop_when_slow = Some(bound)`, stops as soon as more than 1 % of the asked trials took
/// longer than `bound` (the p99 is then over it whatever the other trials do).
pub async fn cross_node_wakes(
    from: &Node,
    to: &Node,
    queue: &str,
    trials: usize,
    pop_timeout: Duration,
    stop_when_slow: Option<Duration>,
) -> Wakes {
    let allowed_slow = trials - (0.99 * trials as f64).ceil() as usize;
    let path = format!(
        "/api/v1/pop/queue/{queue}?autoAck=true&wait=true&timeout={}",
        pop_timeout.as_millis()
    );
    let mut latencies = Vec::with_capacity(trials);
    let mut slow = 0;
    for trial in 0..trials {
        let pop = spawn_get_with(to.http.clone(), to.url_of(&path));
        wait_parked(to, 1).await;
        let payload = json!({ "trial": trial, "queue": queue });
        let sent = Instant::now();
        from.push(queue, "Default", std::slice::from_ref(&payload))
            .await;
        let answer = pop.await.expect("pop task");
        let took = answer.at.saturating_duration_since(sent);
        let got = messages(&to.id, answer.status, &answer.body);
        assert!(
            !got.is_empty(),
            "trial {trial}: the pop parked on node {} answered empty after {took:?}: the push \
             through node {} never reached it",
            to.id,
            from.id
        );
        let data: Vec<_> = got.iter().map(|m| m["data"].clone()).collect();
        assert_eq!(data, vec![payload], "trial {trial}: not the pushed message");
        latencies.push(took);
        if stop_when_slow.is_some_and(|bound| took >= bound) {
            slow += 1;
            if slow > allowed_slow {
                eprintln!(
                    "stopping after trial {trial}: {slow} trials of {trials} at or over {:?}",
                    stop_when_slow.unwrap_or_default()
                );
                break;
            }
        }
    }
    Wakes {
        latencies,
        asked: trials,
    }
}
