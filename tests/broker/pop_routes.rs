//! Pop routes and answers: `batch` as one budget and `partitions` as a cap, the empty
//! (204) and malformed (400) answers, and the three routes (specific, wildcard, discovery).

use std::collections::BTreeMap;

use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::support::fixtures::configure_confirmed;
use crate::support::{payloads, TestBroker};

/// `batch` is one budget for the whole answer and `partitions` caps the claimed partitions,
/// all under one leaseId, on a group's first pop and on a later one alike.
#[actix_rt::test]
async fn a_pop_of_two_partitions_and_batch_five_shares_the_budget_under_one_lease() {
    // Arrange: partitions of four (the budget binds) and of two (the cap binds); a "warm"
    // queue had an empty pop before its pushes, so its pop is not the group's first contact.
    let b = TestBroker::start().await;
    let cases = [
        ("budget-cold", 4, 5usize),
        ("cap-cold", 2, 4usize),
        ("budget-warm", 4, 5usize),
        ("cap-warm", 2, 4usize),
    ];
    for (queue, per_partition, _) in cases {
        if queue.ends_with("warm") {
            let first_contact = b.pop_messages(&format!("/api/v1/pop/queue/{queue}")).await;
            assert!(first_contact.is_empty());
        }
        for p in ["p0", "p1", "p2"] {
            let items: Vec<Value> = (0..per_partition)
                .map(|i| json!({ "p": p, "i": i }))
                .collect();
            b.push(queue, p, &items).await;
        }
    }

    for (queue, _, total) in cases {
        // Act
        let (status, body) = b
            .get(&format!("/api/v1/pop/queue/{queue}?partitions=2&batch=5"))
            .await;

        // Assert
        assert_eq!(status, StatusCode::OK, "{queue}: {body}");
        let messages = body["messages"].as_array().expect("messages");
        assert_eq!(messages.len(), total, "{queue}: {body}");
        let lease = body["leaseId"].as_str().expect("leaseId");
        assert!(!lease.is_empty());
        assert_eq!(body["partitionsClaimed"], 2, "{queue}: {body}");
        let mut per_partition: BTreeMap<String, Vec<i64>> = BTreeMap::new();
        for m in messages {
            assert_eq!(m["leaseId"], lease, "{m}");
            per_partition
                .entry(m["partitionId"].as_str().unwrap().to_owned())
                .or_default()
                .push(m["data"]["i"].as_i64().unwrap());
        }
        assert_eq!(per_partition.len(), 2, "{queue}: {body}");
        for (p, got) in per_partition {
            let prefix: Vec<i64> = (0..got.len() as i64).collect();
            assert_eq!(
                got, prefix,
                "{queue}: partition {p} is not delivered from its head in order"
            );
        }
    }
}

/// An empty queue, an unknown queue and an unknown partition answer 204 with no body.
#[actix_rt::test]
async fn nothing_to_deliver_answers_204_with_an_empty_body() {
    // Arrange
    let b = TestBroker::start().await;
    configure_confirmed(&b, "empty-q", json!({})).await;

    for path in [
        "/api/v1/pop/queue/empty-q",
        "/api/v1/pop/queue/empty-q/partition/Default",
        "/api/v1/pop/queue/empty-q?consumerGroup=g",
        "/api/v1/pop/queue/never-made",
        "/api/v1/pop/queue/never-made/partition/nope",
        "/api/v1/pop/queue/empty-q/partition/nope",
    ] {
        // Act
        let (status, body) = b.get(path).await;

        // Assert
        assert_eq!(status, StatusCode::NO_CONTENT, "{path}: {body}");
        assert_eq!(body, Value::Null, "{path}: a 204 carries no body");
    }
}

/// A bare discovery pop, batch=0 and a non-numeric batch answer 400 with a JSON error.
#[actix_rt::test]
async fn malformed_pops_answer_400_with_a_json_error() {
    // Arrange
    let b = TestBroker::start().await;
    b.push("bad-pop", "Default", &[json!(1)]).await;

    for path in [
        "/api/v1/pop",
        "/api/v1/pop/queue/bad-pop?batch=0",
        "/api/v1/pop/queue/bad-pop?batch=abc",
        "/api/v1/pop/queue/bad-pop/partition/Default?batch=0",
    ] {
        // Act
        let (status, body) = b.get(path).await;

        // Assert
        assert_eq!(status, StatusCode::BAD_REQUEST, "{path}: {body}");
        assert!(
            body["error"].as_str().is_some_and(|e| !e.is_empty()),
            "{path}: no JSON error in {body}"
        );
    }
    let still_there = b.pop_messages("/api/v1/pop/queue/bad-pop").await;
    assert_eq!(payloads(&still_there), vec![json!(1)]);
}

/// The specific route pops its partition, the wildcard any partition, discovery a matching queue.
#[actix_rt::test]
async fn the_three_pop_routes_deliver_from_the_scope_they_name() {
    // Arrange
    let b = TestBroker::start().await;
    configure_in(&b, "routes-a", "ns-a", "task-a").await;
    configure_in(&b, "routes-b", "ns-b", "task-b").await;
    b.push("routes-a", "Default", &[json!("a-default")]).await;
    b.push("routes-a", "P2", &[json!("a-p2")]).await;
    b.push("routes-b", "Default", &[json!("b-default")]).await;

    // Act
    let specific = b
        .pop_messages("/api/v1/pop/queue/routes-a/partition/P2")
        .await;
    let wildcard = b.pop_messages("/api/v1/pop/queue/routes-a").await;
    let by_task = b.pop_messages("/api/v1/pop?task=task-b").await;
    b.ack_all(&specific, "completed", None).await;
    b.ack_all(&wildcard, "completed", None).await;
    b.push("routes-a", "P3", &[json!("a-p3")]).await;
    b.push("routes-b", "B2", &[json!("b-b2")]).await;
    let by_namespace = b.pop_messages("/api/v1/pop?namespace=ns-a").await;
    let nothing_left = b.pop_messages("/api/v1/pop?namespace=ns-a").await;

    // Assert
    assert_eq!(payloads(&specific), vec![json!("a-p2")]);
    assert_eq!(specific[0]["partition"], "P2");
    assert_eq!(payloads(&wildcard), vec![json!("a-default")]);
    assert_eq!(wildcard[0]["partition"], "Default");
    assert_eq!(payloads(&by_task), vec![json!("b-default")]);
    assert_eq!(by_task[0]["queue"], "routes-b");
    assert_eq!(payloads(&by_namespace), vec![json!("a-p3")]);
    assert_eq!(by_namespace[0]["queue"], "routes-a");
    assert!(
        nothing_left.is_empty(),
        "ns-a has nothing unleased left, and routes-b is in another namespace: {nothing_left:?}"
    );
}

/// Configures a queue under a namespace and a task.
async fn configure_in(b: &TestBroker, queue: &str, namespace: &str, task: &str) {
    let (status, body) = b
        .post(
            "/api/v1/configure",
            &json!({ "queue": queue, "namespace": namespace, "task": task, "options": {} }),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
}
