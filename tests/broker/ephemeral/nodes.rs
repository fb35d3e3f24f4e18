//! Ephemeral queues across separate broker processes: every node serves every queue, the
//! owner (rendezvous over the mesh members) holds it and the others forward push, pop (a
//! long poll too) and ack to it; when the owner dies another node takes the queue, empty.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use queen::ephemeral::owner::owner;
use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::nodes::cluster::{Options, TestCluster};
use crate::nodes::node::Node;
use crate::nodes::wait_mesh_connected;
use crate::support::eventually;

/// A queue whose owner among `members` is `node`.
fn queue_owned_by(members: &[&str], node: &str, prefix: &str) -> String {
    let members: Vec<String> = members.iter().map(|m| (*m).to_owned()).collect();
    (0..)
        .map(|i| format!("{prefix}-{i}"))
        .find(|q| owner(&members, "", q) == Some(node))
        .expect("some queue is owned by every node")
}

async fn push(node: &Node, queue: &str, payloads: &[Value]) {
    let messages: Vec<Value> = payloads.iter().map(|p| json!({"payload": p})).collect();
    let (status, body) = node
        .post(
            "/api/v1/ephemeral/push",
            &json!({"queue": queue, "messages": messages}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "push on node {}: {body}", node.id);
}

async fn pop(node: &Node, queue: &str, query: &str) -> Vec<Value> {
    let (status, body) = node
        .get(&format!("/api/v1/ephemeral/pop?queue={queue}&{query}"))
        .await;
    assert_eq!(status, StatusCode::OK, "pop on node {}: {body}", node.id);
    body["messages"].as_array().cloned().unwrap_or_default()
}

#[actix_rt::test]
async fn producers_and_consumers_on_different_nodes_share_one_queue() {
    let cluster = TestCluster::start(3, Options::meshed()).await;
    wait_mesh_connected(&cluster).await;
    let nodes = cluster.nodes();
    // The owner is node a; producers use b and c, consumers all three, acks another node.
    let queue = queue_owned_by(&["a", "b", "c"], "a", "spread");
    let (status, body) = nodes[1]
        .post(
            "/api/v1/ephemeral/configure",
            &json!({"queue": queue, "options": {"leaseSeconds": 30}}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    for round in 0..10u64 {
        let from_b: Vec<Value> = (0..10).map(|k| json!(round * 100 + k)).collect();
        let from_c: Vec<Value> = (0..10).map(|k| json!(round * 100 + 50 + k)).collect();
        push(&nodes[1], &queue, &from_b).await;
        push(&nodes[2], &queue, &from_c).await;
    }
    let mut seen = Vec::new();
    let mut turn = 0;
    while seen.len() < 200 {
        let on = &nodes[turn % 3];
        let acker = &nodes[(turn + 1) % 3];
        turn += 1;
        let got = pop(on, &queue, "group=w&batch=10").await;
        assert!(!got.is_empty() || turn < 100, "stuck at {}", seen.len());
        let acks: Vec<Value> = got.iter().map(|m| json!({"id": m["id"]})).collect();
        let (status, acked) = acker
            .post(
                "/api/v1/ephemeral/ack",
                &json!({"queue": queue, "group": "w", "acks": acks}),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{acked}");
        for r in acked["results"].as_array().unwrap() {
            assert_eq!(r["outcome"], "acked", "ack on node {}: {acked}", acker.id);
        }
        seen.extend(got.iter().map(|m| m["payload"].as_u64().unwrap()));
    }
    let distinct: HashSet<u64> = seen.iter().copied().collect();
    assert_eq!(
        (seen.len(), distinct.len()),
        (200, 200),
        "no loss, no duplicate"
    );
    // Each producer node forwarded its ten pushes to the owner; the owner forwarded none.
    for (node, pushes) in nodes.iter().zip([0, 10, 10]) {
        let (_, metrics) = node.get("/metrics").await;
        let forwarded = &metrics["ephemeral"]["forwarded"];
        assert_eq!(forwarded["push"], pushes, "node {}: {forwarded}", node.id);
    }
    let (_, owner_metrics) = nodes[0].get("/metrics").await;
    assert_eq!(owner_metrics["ephemeral"]["queues"], 1, "a owns the queue");
    for node in nodes {
        let (_, depth) = node
            .get(&format!("/api/v1/ephemeral/queues/{queue}/depth"))
            .await;
        assert_eq!(depth["pending"], 0, "node {}: {depth}", node.id);
        assert_eq!(
            depth["pushed"], 200,
            "every node sees the owner's gauges: {depth}"
        );
    }
}

/// Whether `node` itself holds `queue` (its own row in its listing).
async fn held_by(node: &Node, queue: &str) -> bool {
    let (status, body) = node.get("/api/v1/ephemeral/queues").await;
    assert_eq!(status, StatusCode::OK, "{body}");
    body["queues"].as_array().is_some_and(|rows| {
        rows.iter()
            .any(|r| r["queue"] == queue && r["node"] == node.id.as_str())
    })
}

#[actix_rt::test]
async fn a_long_poll_on_one_node_is_woken_by_a_push_on_another() {
    let cluster = TestCluster::start(3, Options::meshed()).await;
    wait_mesh_connected(&cluster).await;
    let nodes = cluster.nodes();
    let queue = queue_owned_by(&["a", "b", "c"], "c", "wake");
    let url = nodes[0].url_of(&format!(
        "/api/v1/ephemeral/pop?queue={queue}&wait=true&timeout=10000"
    ));
    let http = nodes[0].http.clone();
    let parked = tokio::spawn(async move {
        let answer: Value = http.get(url).send().await.unwrap().json().await.unwrap();
        (Instant::now(), answer)
    });
    // The push's clock starts once the pop is parked on the owner: the owner holds the
    // queue from the pop's first look (which reads the declaration from PostgreSQL first,
    // and can take longer than any fixed pause on a loaded machine).
    let asked_at = Instant::now();
    let parked_on_owner = eventually(Duration::from_secs(10), || async {
        held_by(&nodes[2], &queue).await.then_some(())
    })
    .await;
    assert!(parked_on_owner.is_some(), "the owner never held {queue}");
    let pushed_at = Instant::now();
    let parked_after = pushed_at - asked_at;
    push(&nodes[1], &queue, &[json!("across")]).await;
    let (woke_at, answer) = parked.await.unwrap();
    assert_eq!(answer["messages"][0]["payload"], "across", "{answer}");
    let latency = woke_at - pushed_at;
    assert!(
        latency < Duration::from_millis(200),
        "woken {latency:?} after the push (the owner held the queue {parked_after:?} after \
         the pop was sent)"
    );
}

#[actix_rt::test]
async fn when_the_owner_dies_another_node_serves_the_queue_empty() {
    let mut cluster = TestCluster::start(3, Options::meshed()).await;
    wait_mesh_connected(&cluster).await;
    let queue = queue_owned_by(&["a", "b", "c"], "c", "lost");
    let (status, _) = cluster.nodes()[0]
        .post(
            "/api/v1/ephemeral/configure",
            &json!({"queue": queue, "options": {"maxLength": 7}}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED);
    push(&cluster.nodes()[0], &queue, &[json!(1), json!(2), json!(3)]).await;
    let (_, depth) = cluster.nodes()[1]
        .get(&format!("/api/v1/ephemeral/queues/{queue}/depth"))
        .await;
    assert_eq!(depth["pending"], 3, "{depth}");

    cluster.kill_hard(2);
    let (a, b) = (&cluster.nodes()[0], &cluster.nodes()[1]);
    let moved = eventually(Duration::from_secs(10), || async {
        (a.mesh_counter("peersConnected").await == 1 && b.mesh_counter("peersConnected").await == 1)
            .then_some(())
    })
    .await;
    assert!(moved.is_some(), "a and b saw c go");
    for node in [a, b] {
        let (status, depth) = node
            .get(&format!("/api/v1/ephemeral/queues/{queue}/depth"))
            .await;
        assert_eq!(status, StatusCode::OK, "{depth}");
        assert_eq!(depth["pending"], 0, "the new owner starts empty: {depth}");
        assert_eq!(
            depth["options"]["maxLength"], 7,
            "the declaration survives: {depth}"
        );
    }
    push(a, &queue, &[json!("after")]).await;
    let got = pop(b, &queue, "batch=10").await;
    let payloads: Vec<&Value> = got.iter().map(|m| &m["payload"]).collect();
    assert_eq!(payloads, [&json!("after")]);
}

#[actix_rt::test]
async fn a_queue_that_comes_back_to_a_former_owner_comes_back_empty() {
    let mut cluster = TestCluster::start(3, Options::meshed()).await;
    wait_mesh_connected(&cluster).await;
    // Owned by c with all three up, by a without c.
    let queue = (0..)
        .map(|i| format!("back-{i}"))
        .find(|q| {
            let all: Vec<String> = ["a", "b", "c"].iter().map(|s| (*s).to_owned()).collect();
            let two: Vec<String> = ["a", "b"].iter().map(|s| (*s).to_owned()).collect();
            owner(&all, "", q) == Some("c") && owner(&two, "", q) == Some("a")
        })
        .expect("such a queue");
    cluster.kill_hard(2);
    let a = &cluster.nodes()[0];
    let gone = eventually(Duration::from_secs(10), || async {
        (a.mesh_counter("peersConnected").await == 1).then_some(())
    })
    .await;
    assert!(gone.is_some());
    push(a, &queue, &[json!("held by a")]).await;
    cluster.restart(2).await;
    wait_mesh_connected(&cluster).await;
    // c owns it again (empty: a new process); a lets its copy go though no call reaches it.
    assert!(pop(&cluster.nodes()[1], &queue, "batch=10")
        .await
        .is_empty());
    tokio::time::sleep(Duration::from_secs(1)).await;
    cluster.kill_hard(2);
    let a = &cluster.nodes()[0];
    let gone = eventually(Duration::from_secs(10), || async {
        (a.mesh_counter("peersConnected").await == 1).then_some(())
    })
    .await;
    assert!(gone.is_some());
    let got = pop(a, &queue, "batch=10").await;
    assert!(
        got.is_empty(),
        "a brought back contents from before: {got:?}"
    );
}

#[actix_rt::test]
async fn every_node_lists_the_queues_every_node_holds() {
    let cluster = TestCluster::start(3, Options::meshed()).await;
    wait_mesh_connected(&cluster).await;
    let nodes = cluster.nodes();
    // Queues made by a push through node a (never declared), one owned by each node, the
    // queue owned by node n holding n + 1 messages.
    let owned: Vec<(String, &str, usize)> = ["a", "b", "c"]
        .iter()
        .enumerate()
        .map(|(n, id)| (queue_owned_by(&["a", "b", "c"], id, "listed"), *id, n + 1))
        .collect();
    for (queue, _, count) in &owned {
        let payloads: Vec<Value> = (0..*count).map(|k| json!(k)).collect();
        push(&nodes[0], queue, &payloads).await;
    }
    for node in nodes {
        let (status, body) = node.get("/api/v1/ephemeral/queues").await;
        assert_eq!(status, StatusCode::OK, "{body}");
        assert_eq!(body["unanswered"], json!([]), "node {}: {body}", node.id);
        for (queue, owner_id, count) in &owned {
            let row = body["queues"]
                .as_array()
                .unwrap()
                .iter()
                .find(|r| r["queue"] == queue.as_str())
                .unwrap_or_else(|| panic!("node {} does not list {queue}: {body}", node.id));
            assert_eq!(row["node"], *owner_id, "node {}: {row}", node.id);
            assert_eq!(row["depth"], *count, "node {}: {row}", node.id);
        }
    }
}
