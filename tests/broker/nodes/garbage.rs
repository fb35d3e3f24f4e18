//! Garbage on the mesh port: whatever a stranger sends there is counted and dropped, and the
//! peers' own links, the HTTP side and the cross-node wakes carry on as before.

use std::time::Duration;

use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::cluster::{Options, TestCluster};
use super::{cross_node_wakes, first_contact, wait_mesh_connected, MESH_WAKE_AFTER_FAULT};
use crate::support::eventually;
use crate::support::fixtures::TIMING;

/// How long a garbage connection waits for the node to hang up before giving up on it.
const HANG_UP_WITHIN: Duration = Duration::from_secs(3);

/// A stranger sending random bytes, an oversized length prefix, a frame of junk of a valid
/// length, or connecting and closing, does not disturb the cluster: the nodes still serve,
/// stay connected, wake each other fast, and the node that got the garbage counts it dropped.
#[actix_rt::test]
async fn garbage_on_the_mesh_port_is_dropped_and_counted_and_does_not_disturb_the_cluster() {
    let _quiet = TIMING.lock().await;
    // Arrange
    let cluster = TestCluster::start(
        2,
        Options::meshed()
            .secret("nodes-test-secret")
            .with("QUEEN_HOTLIST_RESEED_MS", "60000"),
    )
    .await;
    let (a, b) = (cluster.node(0), cluster.node(1));
    a.configure("garbage", json!({})).await;
    first_contact(b, "garbage").await;
    wait_mesh_connected(&cluster).await;
    let dropped_before = b.mesh_counter("framesDropped").await;
    let target = format!("127.0.0.1:{}", b.mesh_port);

    // Act
    for (label, bytes) in garbage() {
        send(&target, label, &bytes).await;
    }

    // Assert
    let dropped = eventually(Duration::from_secs(5), || async {
        let now = b.mesh_counter("framesDropped").await;
        (now > dropped_before).then_some(now)
    })
    .await;
    assert!(
        dropped.is_some(),
        "node b's frames_dropped stayed at {dropped_before} after the garbage: {}",
        b.mesh().await
    );
    eprintln!(
        "frames_dropped on node b: {dropped_before} -> {}",
        dropped.unwrap_or_default()
    );
    for node in cluster.nodes() {
        let (status, body) = node.get("/health").await;
        assert!(status.is_success(), "node {} unhealthy: {body}", node.id);
        assert_eq!(
            node.mesh_counter("peersConnected").await,
            1,
            "node {} lost its peer (or counts a stranger as one)",
            node.id
        );
    }
    let wakes = cross_node_wakes(
        a,
        b,
        "garbage",
        20,
        Duration::from_secs(5),
        Some(MESH_WAKE_AFTER_FAULT),
    )
    .await;
    let (_, p99) = wakes.report("cross-node wake after garbage");
    assert_eq!(wakes.latencies.len(), 20, "the trials stopped early");
    assert!(
        p99 < MESH_WAKE_AFTER_FAULT,
        "after the garbage the cross-node wake p99 is {p99:?}: {:?}",
        wakes.latencies
    );
}

/// What a stranger sends, one connection each. The framing's byte order is the mesh's
/// business, so length prefixes come in both orders, and the oversized one reads as
/// oversized either way.
fn garbage() -> Vec<(&'static str, Vec<u8>)> {
    let junk = |n: usize, seed: u64| -> Vec<u8> {
        // xorshift64: fixed bytes from run to run, no extra crate.
        let mut x = seed;
        (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect()
    };
    let framed = |prefix: [u8; 4], body: Vec<u8>| [prefix.to_vec(), body].concat();
    vec![
        ("random bytes", junk(4096, 0x9E37_79B9_7F4A_7C15)),
        (
            "oversized length prefix",
            framed([0xFF, 0xFF, 0xFF, 0xF0], junk(64, 7)),
        ),
        (
            "valid-length junk frame (big-endian prefix)",
            framed(64u32.to_be_bytes(), junk(64, 11)),
        ),
        (
            "valid-length junk frame (little-endian prefix)",
            framed(64u32.to_le_bytes(), junk(64, 13)),
        ),
        ("connect and close", Vec::new()),
    ]
}

/// Connects, writes, half-closes, and reads until the node hangs up (so our close never
/// resets the connection before the node has read what we sent).
async fn send(target: &str, label: &str, bytes: &[u8]) {
    let mut stream = TcpStream::connect(target)
        .await
        .unwrap_or_else(|e| panic!("{label}: cannot connect to the mesh port {target}: {e}"));
    // The node may hang up mid-write: that is a fine answer to garbage.
    let _ = stream.write_all(bytes).await;
    let _ = stream.shutdown().await;
    let mut sink = Vec::new();
    let _ = tokio::time::timeout(HANG_UP_WITHIN, stream.read_to_end(&mut sink)).await;
}
