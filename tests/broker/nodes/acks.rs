//! Acks on another node: a lease lives in PostgreSQL, not in the node that granted it, so any
//! node can complete or fail a message popped through any other, and the release reaches the
//! node that served the pop through the mesh.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::cluster::{Options, TestCluster};
use super::{first_contact, wait_mesh_connected};

/// Long-poll bound of the pops here: long enough to outlast the 1 s lease, so a lease that an
/// ack failed to release would show up as a redelivery inside the same pop.
const POP: &str = "/api/v1/pop/queue/xack?batch=10&wait=true&timeout=4000";

/// A message popped with a lease on node A and acked `completed` on node B is done (never
/// delivered again, even after its lease would have expired); one acked `failed` on node B
/// comes back.
#[actix_rt::test]
async fn an_ack_sent_to_another_node_than_the_one_that_served_the_pop_settles_the_message() {
    // Arrange: a 1 s lease; a short reseed, so the test does not depend on the mesh.
    let cluster =
        TestCluster::start(2, Options::meshed().with("QUEEN_HOTLIST_RESEED_MS", "200")).await;
    let (a, b) = (cluster.node(0), cluster.node(1));
    a.configure("xack", json!({ "leaseTime": 1 })).await;
    a.push("xack", "Default", &[json!("m1")]).await;
    let first = a.pop_messages(POP).await;
    assert_eq!(data(&first), vec![json!("m1")]);
    assert_ne!(first[0]["leaseId"], "", "the pop on node a took no lease");

    // Act 1: complete on B what A served.
    let completed = b.ack_all(&first, "completed").await;

    // Assert 1: accepted, the cursor moved past m1 with its lease gone, and m1 never comes
    // back: the next pop gets only what follows it.
    assert_eq!(completed[0]["success"], true, "{completed:?}");
    let pid: i64 = first[0]["partitionId"]
        .as_str()
        .and_then(|s| s.parse().ok())
        .expect("a numeric partitionId");
    let row = cluster
        .sql()
        .await
        .query_one(
            "SELECT committed, worker_id FROM queen.log_consumers \
             WHERE partition_id = $1 AND consumer_group = '__QUEUE_MODE__'",
            &[&pid],
        )
        .await
        .expect("the queue-mode cursor row");
    let (committed, holder): (i64, Option<String>) = (row.get(0), row.get(1));
    assert_eq!(committed, first[0]["offset"].as_i64().expect("offset"));
    assert_eq!(holder, None, "the lease survived a completed ack on node b");
    a.push("xack", "Default", &[json!("m2")]).await;
    let next = b.pop_messages(POP).await;
    assert_eq!(
        data(&next),
        vec![json!("m2")],
        "after a completed ack on node b, m1 was delivered again (or m2 was not)"
    );
    let done = a.ack_all(&next, "completed").await;
    assert_eq!(done[0]["success"], true, "{done:?}");

    // Act 2: fail on B what A served.
    a.push("xack", "Default", &[json!("m3")]).await;
    let third = a.pop_messages(POP).await;
    assert_eq!(data(&third), vec![json!("m3")]);
    let failed = b.ack_all(&third, "failed").await;

    // Assert 2: accepted, and m3 comes back (to either node), and nothing else is left.
    assert_eq!(failed[0]["success"], true, "{failed:?}");
    let again = b.pop_messages(POP).await;
    assert_eq!(
        data(&again),
        vec![json!("m3")],
        "a failed ack on node b did not bring m3 back"
    );
    assert_eq!(
        again[0]["transactionId"], third[0]["transactionId"],
        "the redelivery is another message"
    );
    let settled = a.ack_all(&again, "completed").await;
    assert_eq!(settled[0]["success"], true, "{settled:?}");
    for node in cluster.nodes() {
        let left = node
            .pop_messages("/api/v1/pop/queue/xack?batch=10&wait=false")
            .await;
        assert!(left.is_empty(), "node {} still delivers {left:?}", node.id);
    }
}

/// A partition whose 60 s lease is released by an ack through node B goes back on node A's
/// ring at once: the next pop on A gets the message behind it within seconds, where without
/// the release hint A would look again only at the old lease's expiry (or its ten-minute
/// reseed).
#[actix_rt::test]
async fn an_ack_through_another_node_puts_the_partition_back_on_the_popping_nodes_ring_at_once() {
    // Arrange: a long lease, and no reseed: only the mesh can bring the partition back soon.
    let cluster = TestCluster::start(
        2,
        Options::meshed().with("QUEEN_HOTLIST_RESEED_MS", "600000"),
    )
    .await;
    wait_mesh_connected(&cluster).await;
    let (a, b) = (cluster.node(0), cluster.node(1));
    a.configure("xrelease", json!({ "leaseTime": 60 })).await;
    first_contact(a, "xrelease").await;
    a.push("xrelease", "Default", &[json!("m1"), json!("m2")])
        .await;
    let first = a.pop_messages("/api/v1/pop/queue/xrelease?batch=1").await;
    assert_eq!(data(&first), vec![json!("m1")]);
    let received_before = a.mesh_counter("hintsReceived").await;

    // Act: complete m1 on B, then pop on A.
    let acked = b.ack_all(&first, "completed").await;
    let started = Instant::now();
    let next = a
        .pop_messages("/api/v1/pop/queue/xrelease?batch=1&wait=true&timeout=10000")
        .await;
    let took = started.elapsed();
    eprintln!("m2 served on node a {took:?} after the ack on node b");

    // Assert
    assert_eq!(acked[0]["success"], true, "{acked:?}");
    assert_eq!(
        data(&next),
        vec![json!("m2")],
        "node a did not serve m2 within its 10 s long-poll after the ack on node b"
    );
    assert!(
        took < Duration::from_secs(3),
        "m2 came {took:?} after the ack (the old lease had 60 s left)"
    );
    assert!(
        a.mesh_counter("hintsReceived").await > received_before,
        "node a received no hint: {}",
        a.mesh().await
    );
    let done = a.ack_all(&next, "completed").await;
    assert_eq!(done[0]["success"], true, "{done:?}");
}

/// The `data` values of popped messages.
fn data(messages: &[Value]) -> Vec<Value> {
    messages.iter().map(|m| m["data"].clone()).collect()
}
