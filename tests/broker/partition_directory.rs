//! The partitions' directory (078_partition_directory.sql): every way a partition comes to
//! be leaves one `log_partition_names` row with its id, queue and name, on plain
//! PostgreSQL and on the Citus layout, where a push finds its partition there and then
//! appends on the partition's worker (`log_partition_resolve_v1`, `log_push_at_v1`).

use std::time::Duration;

use reqwest::StatusCode;
use serde_json::json;

use crate::support::fixtures::configure;
use crate::support::lock_waiters::{lock_partition, lock_waiter_within};
use crate::support::{self, TestBroker};

/// (id, queue id, name) of every partition, from `table`, sorted.
async fn rows(b: &TestBroker, table: &str) -> Vec<(i64, i64, String)> {
    let sql = format!("SELECT id, queue_id, name FROM queen.{table} ORDER BY id");
    b.sql()
        .await
        .query(&sql, &[])
        .await
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1), r.get(2)))
        .collect()
}

/// A push of one message per (queue, partition), answered 201.
async fn push(b: &TestBroker, targets: &[(&str, &str)]) {
    let items: Vec<_> = targets
        .iter()
        .map(|(q, p)| json!({"queue": q, "partition": p, "payload": {"to": p}}))
        .collect();
    let (status, answer) = b.post("/api/v1/push", &json!({ "items": items })).await;
    assert_eq!(status, StatusCode::CREATED, "{answer}");
    for item in answer.as_array().unwrap() {
        assert_eq!(item["status"], "queued", "{answer}");
    }
}

/// How many messages `queue` gives until a pop answers empty (each acked as popped).
async fn pop_all(b: &TestBroker, queue: &str) -> usize {
    let path = format!("/api/v1/pop/queue/{queue}?batch=10&wait=false&autoAck=true");
    let mut got = 0;
    loop {
        let messages = b.pop_messages(&path).await;
        if messages.is_empty() {
            return got;
        }
        got += messages.len();
    }
}

/// A configure (its Default partition), a first push of one partition, of several in one
/// request, a push to a queue with a maxSize (the function path), pushes of two
/// partitions in one transaction bundle, and a second push to a partition that exists:
/// the directory holds exactly the partitions, with their ids, and every message pops.
#[actix_rt::test]
async fn every_partition_created_has_its_directory_row_with_the_same_id() {
    let b = TestBroker::start().await;
    configure(&b, "dir-conf", json!({})).await;
    configure(&b, "dir-max", json!({"maxSize": 100})).await;
    push(&b, &[("dir-one", "a")]).await;
    push(
        &b,
        &[("dir-many", "a"), ("dir-many", "b"), ("dir-many", "c")],
    )
    .await;
    push(&b, &[("dir-max", "m")]).await;
    let bundle = json!({"operations": [{"type": "push", "items": [
        {"queue": "dir-tx", "partition": "x", "payload": 1},
        {"queue": "dir-tx", "partition": "y", "payload": 2}]}]});
    let (status, answer) = b.post("/api/v1/transaction", &bundle).await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    assert_eq!(answer["success"], true, "{answer}");
    push(&b, &[("dir-one", "a"), ("dir-many", "b")]).await;

    let partitions = rows(&b, "log_partitions").await;
    let names: Vec<String> = partitions.iter().map(|p| p.2.clone()).collect();
    let mut sorted = names.clone();
    sorted.sort();
    assert_eq!(
        sorted,
        ["Default", "Default", "a", "a", "b", "c", "m", "x", "y"],
        "{partitions:?}"
    );
    assert_eq!(rows(&b, "log_partition_names").await, partitions);

    for (queue, want) in [
        ("dir-one", 2),
        ("dir-many", 4),
        ("dir-max", 1),
        ("dir-tx", 2),
    ] {
        assert_eq!(pop_all(&b, queue).await, want, "{queue}");
    }
}

/// A partition an older release's node created (a `log_partitions` row, no directory
/// row) is adopted by `log_partition_ensure_v1` with its own id, not created twice. On
/// plain PostgreSQL only: on the layout an older node never wrote.
#[actix_rt::test]
async fn a_partition_without_a_directory_row_is_adopted_with_its_id() {
    if support::citus::script().is_some() {
        eprintln!("the Citus layout has no older-release writers: nothing to check");
        return;
    }
    let b = TestBroker::start().await;
    push(&b, &[("dir-old", "a")]).await;
    let client = b.sql().await;
    let qid: i64 = client
        .query_one("SELECT id FROM queen.queues WHERE name = 'dir-old'", &[])
        .await
        .unwrap()
        .get(0);
    let old: i64 = client
        .query_one(
            "INSERT INTO queen.log_partitions (queue_id, name) VALUES ($1, 'old') RETURNING id",
            &[&qid],
        )
        .await
        .unwrap()
        .get(0);
    let adopted: i64 = client
        .query_one("SELECT queen.log_partition_ensure_v1($1, 'old')", &[&qid])
        .await
        .unwrap()
        .get(0);
    assert_eq!(adopted, old);
    let again: i64 = client
        .query_one("SELECT queen.log_partition_ensure_v1($1, 'old')", &[&qid])
        .await
        .unwrap()
        .get(0);
    assert_eq!(again, old);
    assert_eq!(
        rows(&b, "log_partition_names").await,
        rows(&b, "log_partitions").await
    );
}

/// A push that creates a partition and then waits on another partition's lock holds no lock
/// that a push creating a partition of another queue needs. On the Citus layout the
/// directory and the queues are reference tables, and a write to one locks its shard
/// until the transaction ends: a push that created its partitions inside its transaction
/// held that lock while it waited, and the second push waited behind it
/// (`log::push::directory`). On plain PostgreSQL the inserted rows lock nothing the second
/// push needs, with or without that.
#[actix_rt::test]
async fn a_push_waiting_on_a_partition_lock_holds_no_lock_a_new_partition_needs() {
    // Arrange: "held" exists and is locked; the blocked push creates "a-new" before it
    // reaches "held" (partitions are appended in name order).
    let b = TestBroker::start().await;
    push(&b, &[("dir-wait", "held")]).await;
    let mut locker = b.sql().await;
    let lock = lock_partition(&mut locker, "dir-wait", "held").await;
    let blocked = {
        let (http, url) = (b.http.clone(), b.url("/api/v1/push"));
        let body = json!({"items": [
            {"queue": "dir-wait", "partition": "a-new", "payload": 1},
            {"queue": "dir-wait", "partition": "held", "payload": 2}]});
        tokio::spawn(async move { http.post(&url).json(&body).send().await })
    };
    assert!(
        lock_waiter_within(&b, Duration::from_secs(10)).await,
        "the push never waited on the held partition"
    );

    // Act: a push that creates a queue and its partition, while the first still waits.
    let second =
        tokio::time::timeout(Duration::from_secs(5), push(&b, &[("dir-beside", "fresh")])).await;
    lock.commit().await.unwrap();
    let first = blocked.await.expect("push task").expect("push answered");

    // Assert
    assert!(
        second.is_ok(),
        "a push creating a partition waited on one blocked on another partition's lock"
    );
    assert_eq!(first.status(), StatusCode::CREATED);
    for (queue, want) in [("dir-wait", 3), ("dir-beside", 1)] {
        assert_eq!(pop_all(&b, queue).await, want, "{queue}");
    }
}
