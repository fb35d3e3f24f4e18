//! Two tenants on two broker processes, one queue name: every route of the rules table is
//! called by tenant `beta` aimed at tenant `alpha`'s data (alpha's partition, lease,
//! transaction ids, group and queue names), on both nodes in turn. Beta sees, counts and
//! changes only its own; alpha's data is the same after the walk, its lease still acks.
//! Mesh hints carry the tenant: alpha's push wakes alpha's waiter on the other node and
//! never beta's.

use std::time::Duration;

use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use super::cluster::{Options, TestCluster};
use super::{wait_mesh_connected, wait_parked};
use crate::support::caller::Caller;
use crate::support::eventually;
use crate::support::tokens::SECRET;
use crate::support::{qpb1, qpf1};
use queen::auth::rules::RULES;

/// One streams route as beta, aimed at alpha's query, state and lease: beta's query of the
/// same name is its own, alpha's query id is unknown to beta, and a cycle naming alpha's
/// partition and lease changes nothing (the walk's final check compares alpha's cursors).
async fn streams_walk(
    alpha: &Caller,
    beta: &Caller,
    pattern: &str,
    pid: &str,
    lease: &str,
    what: &str,
) {
    let register =
        |hash: &str| json!({"name": "shared", "source_queue": "shared", "config_hash": hash});
    let (status, mine) = alpha.post("/streams/v1/queries", &register("a")).await;
    assert_eq!(status, StatusCode::OK, "{what}: {mine}");
    let alpha_query = mine["query_id"].clone();
    let secret = json!({"query_id": alpha_query, "partition_id": pid,
                        "consumer_group": "streams.shared", "ack": null,
                        "state_ops": [{"type": "upsert", "key": "k", "value": "alpha-secret"}]});
    let (status, body) = alpha.post("/streams/v1/cycle", &secret).await;
    assert_eq!(
        (status, &body["success"]),
        (StatusCode::OK, &json!(true)),
        "{what}: {body}"
    );
    let read = json!({"query_id": alpha_query, "partition_id": pid, "keys": []});
    let (status, body) = match pattern {
        "/streams/v1/queries" => {
            let (status, body) = beta.post("/streams/v1/queries", &register("b")).await;
            assert_eq!(body["fresh"], true, "{what}: {body}");
            assert_ne!(body["query_id"], alpha_query, "{what}: {body}");
            (status, body)
        }
        "/streams/v1/state/get" => {
            let (status, body) = beta.post("/streams/v1/state/get", &read).await;
            assert_eq!(status, StatusCode::NOT_FOUND, "{what}: {body}");
            (StatusCode::OK, body)
        }
        _ => {
            let (_, own) = beta.post("/streams/v1/queries", &register("b")).await;
            let mut cycle = json!({"query_id": alpha_query, "partition_id": pid,
                                   "consumer_group": "__QUEUE_MODE__",
                                   "state_ops": [{"type": "delete", "key": "k"}],
                                   "ack": {"leaseId": lease, "count": 1}});
            let (status, body) = beta.post("/streams/v1/cycle", &cycle).await;
            assert_eq!(status, StatusCode::NOT_FOUND, "{what}: {body}");
            cycle["query_id"] = own["query_id"].clone();
            let (status, body) = beta.post("/streams/v1/cycle", &cycle).await;
            assert_eq!(status, StatusCode::BAD_REQUEST, "{what}: {body}");
            (StatusCode::OK, body)
        }
    };
    assert!(status.is_success(), "{what}: {status} {body}");
    assert!(!body.to_string().contains("alpha"), "{what}: {body}");
    let (_, kept) = alpha.post("/streams/v1/state/get", &read).await;
    assert_eq!(kept["rows"][0]["value"], "alpha-secret", "{what}: {kept}");
}

/// What alpha holds that beta aims at.
struct Alpha {
    /// The shared queue's partition of alpha.
    partition: String,
    /// The live lease over `held`.
    lease: String,
    /// Two delivered, unacked messages (transaction ids).
    held: Vec<String>,
    /// A dead-lettered message: its partition and transaction id.
    dead: (String, String),
}

/// Alpha's side of the database, read as alpha and in SQL (every cursor, lease and
/// subscription), to compare before and after; nothing time-dependent.
async fn alpha_state(alpha: &Caller, cluster: &TestCluster, a: &Alpha) -> Value {
    let mut state = json!({});
    for path in [
        "/api/v1/resources/queues/shared".to_owned(),
        "/api/v1/resources/queues/alpha-only".to_owned(),
        "/api/v1/resources/partitions".to_owned(),
        "/api/v1/dlq?queue=shared".to_owned(),
        format!("/api/v1/traces/{}/{}", a.partition, a.held[0]),
    ] {
        let (status, body) = alpha.get(&path).await;
        assert_eq!(status, StatusCode::OK, "{path}: {body}");
        state[path] = body;
    }
    let (_, message) = alpha
        .get(&format!("/api/v1/messages/{}/{}", a.partition, a.held[0]))
        .await;
    state["message"] = json!([message["data"], message["status"]]);
    let rows = cluster
        .sql()
        .await
        .query(
            "SELECT c.partition_id::text, c.consumer_group, c.committed::text,
                    coalesce(c.worker_id, ''), coalesce(c.lease_expires_at::text, ''),
                    coalesce(m.subscription_mode, ''),
                    coalesce(m.subscription_timestamp::text, '')
             FROM queen.log_consumers c
             JOIN queen.log_partitions p ON p.id = c.partition_id
             JOIN queen.queues q ON q.id = p.queue_id
             LEFT JOIN queen.consumer_groups_metadata m
               ON m.queue_id = q.id AND m.consumer_group = c.consumer_group
             WHERE q.tenant = 'alpha' ORDER BY 1, 2",
            &[],
        )
        .await
        .expect("alpha's cursors");
    state["cursors"] = rows
        .iter()
        .map(|r| (0..7).map(|i| r.get::<_, String>(i)).collect::<Vec<_>>())
        .collect();
    state
}

/// Nothing of alpha in an answer to beta: no alpha name or payload, no alpha partition.
/// A call scheduling one of alpha's timers in queue `shared`, a minute ahead.
fn alpha_timer(key: &str) -> Value {
    json!({"operations": [{"op": "schedule", "queue": "shared", "timerKey": key,
                           "payload": "eyJmcm9tIjoiYWxwaGEifQ==", "delayMs": 60_000}]})
}

fn assert_no_alpha(what: &str, body: &Value, a: &Alpha) {
    let text = body.to_string();
    assert!(!text.contains("alpha"), "{what} shows alpha's data: {text}");
    for pattern in [
        format!("\"partitionId\":\"{}\"", a.partition),
        a.held[0].clone(),
        a.dead.1.clone(),
        format!("\"partitionId\":\"{}\"", a.dead.0),
    ] {
        assert!(!text.contains(&pattern), "{what} shows {pattern}: {text}");
    }
}

/// The walk (see the module header).
#[actix_rt::test]
async fn two_tenants_on_two_nodes_never_see_or_touch_each_others_data_on_any_route() {
    // Arrange
    let cluster = TestCluster::start(
        2,
        Options::meshed()
            .with("JWT_ENABLED", "true")
            .with("JWT_SECRET", SECRET),
    )
    .await;
    wait_mesh_connected(&cluster).await;
    let (node_a, node_b) = (cluster.node(0), cluster.node(1));
    let alpha = Caller::admin_of(&node_a.url(), "alpha");
    let alpha_b = alpha.on(&node_b.url());
    let betas = [
        Caller::admin_of(&node_a.url(), "beta"),
        Caller::admin_of(&node_b.url(), "beta"),
    ];
    let configure = |queue: &str, ns: &str| {
        json!({"queue": queue, "namespace": ns, "task": format!("{ns}-task"),
               "options": {"leaseTime": 300, "retryLimit": 3}})
    };
    for (caller, queue, ns) in [
        (&alpha, "shared", "ns"),
        (&alpha, "alpha-only", "alpha-ns"),
        (&betas[0], "shared", "ns"),
    ] {
        let (status, body) = caller
            .post("/api/v1/configure", &configure(queue, ns))
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
    }
    // Alpha's queue-mode group warms up on node a (its first pop registers the group; the
    // next ones are single-statement claims, which node a books in its lease book, so the
    // lease alpha holds below can be acked there by the known-lease statement).
    alpha
        .push("shared", "p1", &[json!({"from": "alpha", "warm": true})])
        .await;
    let warm = alpha.pop("/api/v1/pop/queue/shared?batch=1").await;
    let acked = crate::support::ack_batch(&alpha.http, &alpha.base, &warm, "completed", None).await;
    assert!(acked.iter().all(|v| v["success"] == true), "{acked:?}");
    let alpha_payloads: Vec<Value> = (0..6).map(|n| json!({"from": "alpha", "n": n})).collect();
    alpha.push("shared", "p1", &alpha_payloads).await;
    alpha
        .push("alpha-only", "alpha-part", &[json!({"from": "alpha"})])
        .await;
    let mut beta_total = 3;
    betas[1]
        .push(
            "shared",
            "p1",
            &[
                json!({"from": "beta"}),
                json!({"from": "beta"}),
                json!({"from": "beta"}),
            ],
        )
        .await;

    let held = alpha.pop("/api/v1/pop/queue/shared?batch=2").await;
    assert_eq!(held.len(), 2);
    // p1 is leased now: the next pop takes p2's message, which alpha dead-letters.
    alpha
        .push("shared", "p2", &[json!({"from": "alpha", "dead": true})])
        .await;
    let dead = alpha.pop("/api/v1/pop/queue/shared?batch=1").await;
    assert_eq!(dead.len(), 1);
    let (status, body) = alpha
        .post(
            "/api/v1/ack",
            &json!({"transactionId": dead[0]["transactionId"], "partitionId": dead[0]["partitionId"],
                    "leaseId": dead[0]["leaseId"], "status": "dlq", "error": "alpha gave up"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let a = Alpha {
        partition: held[0]["partitionId"]
            .as_str()
            .expect("a partition id")
            .to_owned(),
        lease: held[0]["leaseId"].as_str().expect("a lease id").to_owned(),
        held: held
            .iter()
            .map(|m| m["transactionId"].as_str().expect("a txn").to_owned())
            .collect(),
        dead: (
            dead[0]["partitionId"]
                .as_str()
                .expect("a partition")
                .to_owned(),
            dead[0]["transactionId"].as_str().expect("a txn").to_owned(),
        ),
    };
    let group_pop = "/api/v1/pop/queue/shared?consumerGroup=alpha-group&autoAck=true&batch=1";
    assert_eq!(alpha.pop(group_pop).await.len(), 1);
    let (status, body) = alpha
        .post(
            "/api/v1/traces",
            &json!({"partitionId": a.partition, "transactionId": a.held[0],
                    "traceNames": ["t-mark"], "eventType": "info", "data": {"by": "alpha"}}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");

    // Mesh hints carry the tenant: beta parked on node b stays parked (and unwoken) while
    // alpha pushes on node a; alpha parked on node b wakes with alpha's message.
    // Both own a queue `wake`; each group's first contact (and the reseed after it) first.
    alpha.push("wake", "w", &[json!({"from": "alpha"})]).await;
    betas[1].push("wake", "w", &[json!({"from": "beta"})]).await;
    let drain = "/api/v1/pop/queue/wake?consumerGroup=waker&autoAck=true&batch=100";
    for _ in 0..2 {
        alpha_b.pop(drain).await;
        betas[1].pop(drain).await;
    }
    let beta_wait = betas[1].clone();
    let beta_parked = tokio::spawn(async move {
        beta_wait
            .get("/api/v1/pop/queue/wake?consumerGroup=waker&wait=true&timeout=6000")
            .await
    });
    wait_parked(node_b, 1).await;
    let wakes_before = node_b.counter("/wakes/peer").await;
    let hints_before = node_b.mesh_counter("hintsReceived").await;
    alpha
        .push("wake", "w", &[json!({"from": "alpha", "wake": 1})])
        .await;
    let hinted = eventually(Duration::from_secs(5), || async {
        (node_b.mesh_counter("hintsReceived").await > hints_before).then_some(())
    })
    .await;
    assert!(hinted.is_some(), "node b never received alpha's push hint");
    assert_eq!(
        node_b.counter("/wakes/peer").await,
        wakes_before,
        "alpha's hint woke beta"
    );
    let (status, body) = beta_parked.await.expect("beta's pop");
    assert_eq!(
        status,
        StatusCode::NO_CONTENT,
        "beta's parked pop got {body}"
    );
    let first = alpha_b
        .pop("/api/v1/pop/queue/wake?consumerGroup=waker&autoAck=true&wait=true&timeout=10000")
        .await;
    assert_eq!(first.len(), 1, "{first:?}");
    assert_eq!(first[0]["data"]["wake"], 1);
    let alpha_wait = alpha_b.clone();
    let alpha_parked = tokio::spawn(async move {
        alpha_wait
            .pop("/api/v1/pop/queue/wake?consumerGroup=waker&autoAck=true&wait=true&timeout=10000")
            .await
    });
    wait_parked(node_b, 1).await;
    alpha
        .push("wake", "w", &[json!({"from": "alpha", "wake": 2})])
        .await;
    let woke = alpha_parked.await.expect("alpha's pop");
    assert_eq!(woke.len(), 1, "{woke:?}");
    assert_eq!(woke[0]["data"]["wake"], 2);

    let before = alpha_state(&alpha, &cluster, &a).await;

    // Act + Assert: every route, as beta, aimed at alpha.
    let mut delete_queue = false;
    let mut eph_pushed = 0;
    for (i, (method, pattern, _)) in RULES.iter().enumerate() {
        let beta = &betas[i % 2];
        let what = format!("{method} {pattern} on node {}", i % 2);
        let group = format!("walk-{i}");
        let pid = &a.partition;
        let txn = &a.held[0];
        let method = Method::from_bytes(method.as_bytes()).expect("a method");
        let (status, body) = match (method.as_str(), *pattern) {
            ("POST", "/api/v1/push") => {
                beta.push("shared", "p1", &[json!({"from": "beta"})]).await;
                let body = qpb1::plain(
                    0,
                    &[(
                        "shared",
                        "p1",
                        vec![qpb1::Item {
                            txn: "",
                            payload: r#"{"from":"beta","bin":1}"#,
                        }],
                    )],
                );
                let (status, body) = beta
                    .post_bytes("/api/v1/push", "application/x-queen-push", body)
                    .await;
                assert!(status.is_success(), "{what} (QPB1): {body}");
                beta_total += 2;
                continue;
            }
            (
                "GET",
                "/api/v1/pop"
                | "/api/v1/pop/queue/{queue}"
                | "/api/v1/pop/queue/{queue}/partition/{partition}",
            ) => {
                let path = match *pattern {
                    "/api/v1/pop" => "/api/v1/pop?namespace=ns".to_owned(),
                    "/api/v1/pop/queue/{queue}" => "/api/v1/pop/queue/shared".to_owned(),
                    _ => "/api/v1/pop/queue/shared/partition/p1".to_owned(),
                };
                let got = beta
                    .pop(&format!(
                        "{path}{}consumerGroup={group}&autoAck=true&batch=100",
                        if path.contains('?') { "&" } else { "?" }
                    ))
                    .await;
                assert_eq!(got.len(), beta_total, "{what}: {got:?}");
                // The framed (QPF1) answer of the same route, for a group of its own.
                let (status, bytes) = beta
                    .get_bytes(&format!(
                        "{path}{}consumerGroup={group}-framed&autoAck=true&batch=100&frames=true",
                        if path.contains('?') { "&" } else { "?" }
                    ))
                    .await;
                assert_eq!(status, StatusCode::OK, "{what} (QPF1)");
                let framed = qpf1::decode(&bytes);
                assert!(
                    framed
                        .claims
                        .iter()
                        .all(|c| c.partition_id.to_string() != a.partition),
                    "{what} (QPF1) claimed alpha's partition"
                );
                let framed = framed.messages();
                assert_eq!(framed.len(), beta_total, "{what} (QPF1): {framed:?}");
                assert_no_alpha(&format!("{what} (QPF1)"), &json!(framed), &a);
                (StatusCode::OK, json!(got))
            }
            ("POST", "/api/v1/ack") => {
                // Through node b: node a's lease book is left for the whole-lease probe of
                // the batch route below.
                let (status, body) = betas[1]
                    .post(
                        "/api/v1/ack",
                        &json!({"transactionId": txn, "partitionId": pid,
                        "leaseId": a.lease, "status": "completed"}),
                    )
                    .await;
                assert!(
                    body.to_string().contains("\"success\":false"),
                    "{what}: {body}"
                );
                (status, json!(null))
            }
            ("POST", "/api/v1/ack/batch") => {
                // Nacks under the lease, a completion without it, and the whole lease
                // completed: the shape the one-statement acks take.
                let nacks: Vec<Value> = a.held.iter()
                    .map(|t| json!({"transactionId": t, "partitionId": pid, "leaseId": a.lease, "status": "failed"}))
                    .chain([json!({"transactionId": a.held[1], "partitionId": pid, "status": "completed"})])
                    .collect();
                let whole: Vec<Value> = a.held.iter()
                    .map(|t| json!({"transactionId": t, "partitionId": pid, "leaseId": a.lease, "status": "completed"}))
                    .collect();
                // The whole-lease shape goes to both nodes: node a served alpha's pop and
                // holds its lease in its lease book (the known-lease ack).
                for (acks, by) in [
                    (whole.clone(), &betas[0]),
                    (whole, &betas[1]),
                    (nacks, beta),
                ] {
                    let (status, body) = by
                        .post("/api/v1/ack/batch", &json!({"acknowledgments": acks}))
                        .await;
                    assert_eq!(status, StatusCode::OK, "{what}: {body}");
                    let answers = body.as_array().cloned().unwrap_or_default();
                    assert_eq!(answers.len(), acks.len(), "{what}: {body}");
                    assert!(
                        answers.iter().all(|v| v["success"] == false),
                        "{what}: {body}"
                    );
                }
                (StatusCode::OK, json!(null))
            }
            ("POST", "/api/v1/transaction") => {
                let (status, body) = beta
                    .post(
                        "/api/v1/transaction",
                        &json!({
                        "operations": [{"type": "ack", "transactionId": txn, "partitionId": pid,
                                        "leaseId": a.lease, "status": "completed"}],
                        "requiredLeases": [a.lease]}),
                    )
                    .await;
                assert_eq!(body["success"], false, "{what}: {body}");
                let (status2, body2) = beta
                    .post(
                        "/api/v1/transaction",
                        &json!({
                        "operations": [{"type": "ack", "transactionId": txn, "partitionId": pid,
                                        "status": "completed"}]}),
                    )
                    .await;
                assert_eq!(
                    body2["success"], false,
                    "{what} without a lease: {status2} {body2}"
                );
                (status, json!(null))
            }
            ("POST", "/api/v1/lease/{lease_id}/extend") => {
                let (status, body) = beta
                    .post(
                        &format!("/api/v1/lease/{}/extend", a.lease),
                        &json!({"seconds": 3600}),
                    )
                    .await;
                assert_eq!(
                    (body["success"].clone(), body["renewed"].clone()),
                    (json!(false), json!(0)),
                    "{what}: {body}"
                );
                (status, body)
            }
            ("POST", "/api/v1/fetch") => {
                let asks: Vec<Value> = [
                    ("shared", "p1"),
                    ("shared", "p2"),
                    ("alpha-only", "alpha-part"),
                ]
                .iter()
                .map(|(q, p)| json!({"queue": q, "partition": p, "offset": 0}))
                .collect();
                let (status, mut body) =
                    beta.post("/api/v1/fetch", &json!({"entries": asks})).await;
                let entries = body["entries"].as_array_mut().expect("entries");
                assert_eq!(entries.len(), 3, "{what}");
                let records = entries[0]["records"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default();
                assert!(!records.is_empty(), "{what}: beta's own records");
                assert!(
                    records.iter().all(|r| r["payload"]["from"] == "beta"),
                    "{what}: {records:?}"
                );
                assert_eq!(
                    (
                        entries[1]["highWatermark"].clone(),
                        entries[1]["records"].clone()
                    ),
                    (json!(0), json!([])),
                    "{what}"
                );
                assert_eq!(entries[2]["error"], "UNKNOWN_TOPIC_OR_PARTITION", "{what}");
                // The echoes of the names asked (alpha-only) are not alpha's data.
                for e in entries.iter_mut() {
                    e.as_object_mut()
                        .map(|o| (o.remove("queue"), o.remove("partition")));
                }
                (status, body)
            }
            ("POST", "/api/v1/partitions/changed") => {
                let (status, mut body) = beta
                    .post(
                        "/api/v1/partitions/changed",
                        &json!({"entries": [{"queue": "shared"}, {"queue": "alpha-only"}]}),
                    )
                    .await;
                let entries = body["entries"].as_array_mut().expect("entries");
                let names: Vec<Value> = entries[0]["partitions"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|p| p["name"].clone())
                    .collect();
                assert!(
                    names.contains(&json!("p1")) && !names.contains(&json!("p2")),
                    "{what}: {names:?}"
                );
                assert_eq!(entries[1]["error"], "UNKNOWN_TOPIC_OR_PARTITION", "{what}");
                for e in entries.iter_mut() {
                    e.as_object_mut().map(|o| o.remove("queue"));
                }
                (status, body)
            }
            ("POST", "/api/v1/configure") => {
                beta.post(
                    "/api/v1/configure",
                    &json!({"queue": "shared", "namespace": "ns",
                    "options": {"leaseTime": 7, "retryLimit": 9}}),
                )
                .await
            }
            ("POST" | "PUT", "/api/v1/system/maintenance") => {
                let (status, body) = beta
                    .send(
                        method.clone(),
                        "/api/v1/system/maintenance",
                        Some(&json!({"pop": true})),
                    )
                    .await;
                assert_eq!(status, StatusCode::FORBIDDEN, "{what}: {body}");
                (StatusCode::OK, body)
            }
            ("GET", "/api/v1/consumer-groups/{group}") => {
                let (status, body) = beta.get("/api/v1/consumer-groups/alpha-group").await;
                assert_eq!(status, StatusCode::NOT_FOUND, "{what}: {body}");
                (StatusCode::OK, body)
            }
            // These answers echo the names the request gave (alpha's group): what they
            // did to alpha is checked by comparing alpha's state after the walk.
            ("DELETE", "/api/v1/consumer-groups/{group}") => {
                let (status, body) = beta.delete("/api/v1/consumer-groups/alpha-group").await;
                assert_eq!(body["deletedPartitions"], 0, "{what}: {body}");
                (status, Value::Null)
            }
            ("DELETE", "/api/v1/consumer-groups/{group}/queues/{queue}") => {
                let (status, body) = beta
                    .delete("/api/v1/consumer-groups/alpha-group/queues/shared")
                    .await;
                assert_eq!(body["deletedPartitions"], 0, "{what}: {body}");
                (status, Value::Null)
            }
            ("POST", "/api/v1/consumer-groups/{group}/subscription") => {
                let (status, body) = beta
                    .post(
                        "/api/v1/consumer-groups/alpha-group/subscription",
                        &json!({"subscriptionTimestamp": "2030-01-01T00:00:00Z"}),
                    )
                    .await;
                assert!(status.is_success(), "{what}: {body}");
                (status, Value::Null)
            }
            ("POST", "/api/v1/consumer-groups/{group}/queues/{queue}/seek") => {
                let (status, body) = beta
                    .post(
                        "/api/v1/consumer-groups/alpha-group/queues/alpha-only/seek",
                        &json!({"toEnd": true}),
                    )
                    .await;
                assert_eq!(status, StatusCode::NOT_FOUND, "{what}: {body}");
                let (status, body) = beta
                    .post(
                        "/api/v1/consumer-groups/alpha-group/queues/shared/seek",
                        &json!({"toEnd": true}),
                    )
                    .await;
                assert!(status.is_success(), "{what}: {body}");
                // The seek made beta cursors of its own group of that name: forget them,
                // so later answers to beta hold no "alpha" they did not come from alpha.
                let (gone, body) = beta.delete("/api/v1/consumer-groups/alpha-group").await;
                assert!(gone.is_success(), "{what}: {body}");
                (status, Value::Null)
            }
            ("POST", "/api/v1/messages/{partition_id}/{transaction_id}/retry") => {
                let (status, body) = beta
                    .post(
                        &format!("/api/v1/messages/{}/{}/retry", a.dead.0, a.dead.1),
                        &json!({}),
                    )
                    .await;
                assert_eq!(status, StatusCode::NOT_FOUND, "{what}: {body}");
                (StatusCode::OK, body)
            }
            ("GET" | "DELETE", "/api/v1/messages/{partition_id}/{transaction_id}") => {
                let (status, body) = beta
                    .send(
                        method.clone(),
                        &format!("/api/v1/messages/{pid}/{txn}"),
                        None,
                    )
                    .await;
                assert_eq!(status, StatusCode::NOT_FOUND, "{what}: {body}");
                (StatusCode::OK, body)
            }
            ("DELETE", "/api/v1/resources/queues/{queue}") => {
                delete_queue = true; // after the walk: the later routes still read beta's queue
                continue;
            }
            ("GET", "/api/v1/resources/queues/{queue}") => {
                let (status, body) = beta.get("/api/v1/resources/queues/shared").await;
                assert_eq!(body["totals"]["total"], beta_total, "{what}: {body}");
                (status, body)
            }
            ("GET", "/api/v1/resources/partitions") => {
                let (status, body) = beta.get("/api/v1/resources/partitions").await;
                let ids: Vec<&str> = body["partitions"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|p| p["id"].as_str())
                    .collect();
                assert!(!ids.is_empty(), "{what}: {body}");
                assert!(!ids.contains(&a.partition.as_str()), "{what}: {body}");
                assert!(!ids.contains(&a.dead.0.as_str()), "{what}: {body}");
                (status, body)
            }
            ("GET", "/api/v1/resources/queues/{queue}/depth") => {
                beta.get("/api/v1/resources/queues/shared/depth").await
            }
            ("GET", "/api/v1/resources/overview") => {
                let (status, body) = beta.get("/api/v1/resources/overview").await;
                assert_eq!(
                    (body["queues"].clone(), body["messages"]["total"].clone()),
                    (json!(2), json!(beta_total + 1)),
                    "{what}: {body}"
                );
                (status, body)
            }
            ("GET", "/api/v1/status/queues/{queue}") => {
                beta.get("/api/v1/status/queues/shared").await
            }
            ("POST", "/api/v1/traces") => {
                let (status, body) = beta
                    .post(
                        "/api/v1/traces",
                        &json!({"partitionId": pid, "transactionId": txn,
                        "traceNames": ["beta-trace"], "data": {}}),
                    )
                    .await;
                assert_eq!(status, StatusCode::NOT_FOUND, "{what}: {body}");
                (StatusCode::OK, body)
            }
            ("GET", "/api/v1/traces/by-name/{name}") => {
                beta.get("/api/v1/traces/by-name/t-mark").await
            }
            ("GET", "/api/v1/traces/{partition_id}/{transaction_id}") => {
                let (status, body) = beta.get(&format!("/api/v1/traces/{pid}/{txn}")).await;
                assert_eq!(body["traces"], json!([]), "{what}: {body}");
                (status, body)
            }
            ("GET", "/api/v1/messages") => beta.get("/api/v1/messages?queue=shared").await,
            ("GET", "/api/v1/dlq") => beta.get("/api/v1/dlq?queue=shared").await,
            ("GET", "/api/v1/status/analytics") => {
                beta.get("/api/v1/status/analytics?interval=hour").await
            }
            (_, p) if p.starts_with("/api/v1/ephemeral/") => {
                let secret = json!({"queue": "eph", "messages": [{"payload": "alpha-eph"}]});
                let (stored, body) = alpha.post("/api/v1/ephemeral/push", &secret).await;
                assert_eq!(stored, StatusCode::OK, "{what}: {body}");
                eph_pushed += 1;
                match p {
                    "/api/v1/ephemeral/configure" => {
                        let options = json!({"queue": "eph", "options": {"maxLength": 1}});
                        beta.post(p, &options).await
                    }
                    "/api/v1/ephemeral/reset" => beta.post(p, &json!({"queue": "eph"})).await,
                    "/api/v1/ephemeral/queue/{queue}" => {
                        beta.delete("/api/v1/ephemeral/queue/eph").await
                    }
                    "/api/v1/ephemeral/push" => {
                        let push = json!({"queue": "eph", "messages": [{"payload": "b"}]});
                        beta.post(p, &push).await
                    }
                    "/api/v1/ephemeral/pop" => {
                        let (status, body) = beta
                            .get("/api/v1/ephemeral/pop?queue=eph&batch=100&autoAck=true")
                            .await;
                        assert!(
                            body["messages"].as_array().is_some_and(|m| m.len() <= 1),
                            "{what}: {body}"
                        );
                        (status, body)
                    }
                    "/api/v1/ephemeral/ack" => {
                        let ack = json!({"queue": "eph", "acks": [{"id": "1.1.0"}]});
                        beta.post(p, &ack).await
                    }
                    "/api/v1/ephemeral/queues/{queue}/depth" => {
                        beta.get("/api/v1/ephemeral/queues/eph/depth").await
                    }
                    _ => beta.get(p).await,
                }
            }
            ("GET", path) if !path.contains('{') => beta.get(path).await,
            ("POST", "/api/v1/stats/refresh") => {
                beta.post("/api/v1/stats/refresh", &json!({})).await
            }
            ("POST", "/api/v1/kv") => {
                let secret = json!({"operations": [{"op": "put", "ns": "shared", "key": "k",
                                                    "value": "alpha-secret", "forever": true}]});
                let (stored, body) = alpha.post("/api/v1/kv", &secret).await;
                assert_eq!(stored, StatusCode::OK, "{what}: {body}");
                let (status, body) = beta
                    .post(
                        "/api/v1/kv",
                        &json!({"operations": [
                            {"op": "get", "ns": "shared", "key": "k"},
                            {"op": "getPrefix", "ns": "shared", "prefix": "k"},
                            {"op": "putIfAbsent", "ns": "shared", "key": "k",
                             "value": "beta", "forever": true},
                        ]}),
                    )
                    .await;
                let r = &body["results"];
                assert_eq!(r[0]["found"], false, "{what}: {body}");
                assert_eq!(r[1]["rows"], json!([]), "{what}: {body}");
                assert_eq!(r[2]["applied"], true, "{what}: {body}");
                let get = json!({"operations": [{"op": "get", "ns": "shared", "key": "k"}]});
                let (_, kept) = alpha.post("/api/v1/kv", &get).await;
                assert_eq!(
                    kept["results"][0]["value"], "alpha-secret",
                    "{what}: {kept}"
                );
                (status, body)
            }
            ("POST", "/api/v1/locks") => {
                let take = json!({"operations": [{"op": "acquire", "name": "shared",
                                                  "owner": "alpha", "ttlSeconds": 600}]});
                let (taken, body) = alpha.post("/api/v1/locks", &take).await;
                assert_eq!(taken, StatusCode::OK, "{what}: {body}");
                let token = body["results"][0]["token"].clone();
                let (status, body) = beta
                    .post(
                        "/api/v1/locks",
                        &json!({"operations": [
                            {"op": "get", "name": "shared"},
                            {"op": "acquire", "name": "mine", "owner": "beta",
                             "ttlSeconds": 600},
                            {"op": "release", "name": "other", "token": token},
                        ]}),
                    )
                    .await;
                let r = &body["results"];
                assert_eq!(r[0]["held"], false, "{what}: {body}");
                assert_eq!(r[1]["acquired"], true, "{what}: {body}");
                assert_eq!(r[2]["released"], false, "{what}: {body}");
                let (_, again) = beta
                    .post(
                        "/api/v1/locks",
                        &json!({"operations": [{"op": "acquire", "name": "shared",
                                                "owner": "beta", "ttlSeconds": 600}]}),
                    )
                    .await;
                assert_eq!(again["results"][0]["acquired"], true, "{what}: {again}");
                let get = json!({"operations": [{"op": "get", "name": "shared"}]});
                let (_, kept) = alpha.post("/api/v1/locks", &get).await;
                let holder = &kept["results"][0]["holders"][0];
                assert_eq!(
                    (&holder["owner"], &holder["token"]),
                    (&json!("alpha"), &token),
                    "{what}: {kept}"
                );
                (status, body)
            }
            ("POST", "/streams/v1/queries" | "/streams/v1/state/get" | "/streams/v1/cycle") => {
                streams_walk(&alpha, beta, pattern, pid, &a.lease, &what).await;
                continue;
            }
            ("GET", "/api/v1/resources/kv/{namespace}") => {
                let secret = json!({"operations": [{"op": "put", "ns": "listed", "key": "k",
                                                    "value": "alpha-secret", "forever": true}]});
                let (stored, body) = alpha.post("/api/v1/kv", &secret).await;
                assert_eq!(stored, StatusCode::OK, "{what}: {body}");
                let (status, body) = beta.get("/api/v1/resources/kv/listed").await;
                assert_eq!(body["rows"], json!([]), "{what}: {body}");
                let (_, listed) = beta.get("/api/v1/resources/kv").await;
                let names: Vec<&Value> = listed["namespaces"]
                    .as_array()
                    .map(|l| l.iter().map(|n| &n["namespace"]).collect())
                    .unwrap_or_default();
                assert!(!names.contains(&&json!("listed")), "{what}: {listed}");
                (status, body)
            }
            ("POST", "/api/v1/timers") => {
                let (stored, body) = alpha
                    .post("/api/v1/timers", &alpha_timer("walk/post"))
                    .await;
                assert_eq!(stored, StatusCode::OK, "{what}: {body}");
                let (status, body) = beta
                    .post(
                        "/api/v1/timers",
                        &json!({"operations": [
                            {"op": "cancel", "queue": "shared", "timerKey": "walk/post"},
                        ]}),
                    )
                    .await;
                assert_eq!(body["results"][0]["status"], "absent", "{what}: {body}");
                let (_, kept) = alpha.get("/api/v1/timers/shared/walk/post").await;
                assert_eq!(kept["found"], true, "{what}: {kept}");
                (status, body)
            }
            ("GET", "/api/v1/timers/{queue}") => {
                alpha
                    .post("/api/v1/timers", &alpha_timer("walk/list"))
                    .await;
                let (status, body) = beta.get("/api/v1/timers/shared").await;
                assert_eq!(body["rows"], json!([]), "{what}: {body}");
                (status, body)
            }
            ("GET", "/api/v1/timers/{queue}/{timer_key:.*}") => {
                alpha
                    .post("/api/v1/timers", &alpha_timer("walk/peek"))
                    .await;
                let (status, body) = beta.get("/api/v1/timers/shared/walk/peek").await;
                assert_eq!(body["found"], false, "{what}: {body}");
                (status, body)
            }
            ("DELETE", "/api/v1/timers/{queue}/{timer_key:.*}") => {
                alpha
                    .post("/api/v1/timers", &alpha_timer("walk/delete"))
                    .await;
                let (status, body) = beta.delete("/api/v1/timers/shared/walk/delete").await;
                assert_eq!(body["status"], "absent", "{what}: {body}");
                let (_, kept) = alpha.get("/api/v1/timers/shared/walk/delete").await;
                assert_eq!(kept["found"], true, "{what}: {kept}");
                (status, body)
            }
            ("GET", "/console/assets/{file}" | "/console/{view:.*}") => continue, // static files
            (m, p) => panic!("route {m} {p} is not walked by this test: add it"),
        };
        assert!(status.is_success(), "{what}: {status} {body}");
        assert_no_alpha(&what, &body, &a);
    }
    assert!(delete_queue, "the queue deletion route was walked");
    assert_eq!(eph_pushed, 8, "the eight ephemeral routes were walked");
    let (_, eph) = alpha
        .get("/api/v1/ephemeral/pop?queue=eph&batch=100&autoAck=true")
        .await;
    let eph: Vec<&Value> = eph["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .collect();
    assert_eq!(
        eph.len(),
        8,
        "alpha's ephemeral messages are all there: {eph:?}"
    );
    assert!(eph.iter().all(|m| m["payload"] == "alpha-eph"), "{eph:?}");
    let (status, body) = betas[0].delete("/api/v1/resources/queues/shared").await;
    assert_eq!(
        (status, &body["existed"]),
        (StatusCode::OK, &json!(true)),
        "{body}"
    );
    let (status, body) = betas[1].get("/api/v1/resources/queues/shared").await;
    assert_eq!(
        status,
        StatusCode::NOT_FOUND,
        "beta's queue is gone: {body}"
    );

    // Assert: alpha's side unchanged, its lease still acks, its messages all there.
    let after = alpha_state(&alpha, &cluster, &a).await;
    assert_eq!(before, after, "alpha's data changed");
    let (status, config) = alpha.get("/api/v1/resources/queues/shared").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(config["config"]["lease_time"], 300, "{config}");
    let acks =
        crate::support::ack_batch(&alpha_b.http, &alpha_b.base, &held, "completed", None).await;
    assert!(
        acks.iter().all(|v| v["success"] == true),
        "alpha's lease: {acks:?}"
    );
    let rest = alpha_b
        .pop("/api/v1/pop/queue/shared?batch=100&autoAck=true")
        .await;
    let ns: Vec<Value> = rest.iter().map(|m| m["data"]["n"].clone()).collect();
    assert_eq!(ns, [json!(2), json!(3), json!(4), json!(5)], "{rest:?}");
    drop(cluster);
}
