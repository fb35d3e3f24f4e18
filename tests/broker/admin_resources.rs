//! The resources endpoints (contract §4.4, decision 9.6) over real pushes, pops and acks:
//! queue listings and counts, depth, partitions, namespaces and tasks, and queue deletion.

use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::support::fixtures::{entry, numbers, sql_count};
use crate::support::TestBroker;

async fn delete(b: &TestBroker, path: &str) -> (StatusCode, Value) {
    let response = b.http.delete(b.url(path)).send().await.expect("delete");
    let status = response.status();
    (status, response.json().await.unwrap_or(Value::Null))
}

/// Queue `res-a` (namespace `ns1`, task `t1`): 3 messages in `p1`, 2 in `p2`; queue mode
/// acked 2 of `p1` and holds the third under a lease. So: total 5, completed 2,
/// processing 1, pending 2.
async fn arrange_counts(b: &TestBroker) {
    let (status, body) = b
        .post(
            "/api/v1/configure",
            &json!({"queue": "res-a", "namespace": "ns1", "task": "t1", "options": {}}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    b.push("res-a", "p1", &numbers(0..3)).await;
    b.push("res-a", "p2", &numbers(3..5)).await;
    let done = b
        .pop_messages("/api/v1/pop/queue/res-a/partition/p1?batch=2")
        .await;
    assert_eq!(done.len(), 2);
    b.ack_all(&done, "completed", None).await;
    let held = b
        .pop_messages("/api/v1/pop/queue/res-a/partition/p1?batch=1")
        .await;
    assert_eq!(held.len(), 1);
}

/// The queue list and the overview count messages against the queue-mode cursor.
#[actix_rt::test]
async fn the_queue_list_and_overview_count_total_pending_and_processing_messages() {
    // Arrange
    let b = TestBroker::start().await;
    arrange_counts(&b).await;

    // Act
    let (status, list) = b.get("/api/v1/resources/queues").await;
    let (_, overview) = b.get("/api/v1/resources/overview").await;
    let (_, searched) = b.get("/api/v1/resources/queues?search=zzz").await;

    // Assert
    assert_eq!(status, StatusCode::OK, "{list}");
    let q = &list["queues"][0];
    assert_eq!(q["name"], "res-a", "{list}");
    assert_eq!(q["namespace"], "ns1");
    assert_eq!(q["task"], "t1");
    assert_eq!(q["partitions"], 3, "Default, p1, p2: {q}");
    assert_eq!(
        q["messages"],
        json!({"total": 5, "pending": 2, "processing": 1})
    );
    assert_eq!(overview["queues"], 1, "{overview}");
    assert_eq!(
        overview["messages"],
        json!({"total": 5, "pending": 2, "processing": 1, "completed": 2, "deadLetter": 0})
    );
    assert_eq!(searched, json!({"queues": [], "total": 0}));
}

/// The queue detail lists partitions with their stats; an unknown queue is a 404 and a bad
/// name a 400.
#[actix_rt::test]
async fn the_queue_detail_lists_partition_stats_and_an_unknown_queue_is_not_found() {
    // Arrange
    let b = TestBroker::start().await;
    arrange_counts(&b).await;

    // Act
    let (status, body) = b.get("/api/v1/resources/queues/res-a").await;
    let (missing, missing_body) = b.get("/api/v1/resources/queues/nope").await;
    let (bad, _) = b.get("/api/v1/resources/queues/%01").await;

    // Assert
    assert_eq!(status, StatusCode::OK, "{body}");
    let p1 = body["partitions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "p1")
        .cloned()
        .unwrap();
    assert_eq!(
        p1["stats"],
        json!({"total": 3, "pending": 0, "processing": 1, "completed": 2, "failed": 0,
               "deadLetter": 0})
    );
    assert!(p1["oldestMessage"].is_string(), "{p1}");
    assert_eq!(body["totals"]["total"], 5, "{body}");
    assert_eq!(body["totals"]["pending"], 2, "{body}");
    assert_eq!(body["config"]["retry_limit"], 3, "{body}");
    assert_eq!(missing, StatusCode::NOT_FOUND);
    assert_eq!(missing_body, json!({"error": "Queue not found"}));
    assert_eq!(bad, StatusCode::BAD_REQUEST);
}

/// Namespaces and tasks group the queues that have one, with their message counts.
#[actix_rt::test]
async fn namespaces_and_tasks_group_queues_with_their_message_counts() {
    // Arrange
    let b = TestBroker::start().await;
    arrange_counts(&b).await;
    b.push("res-plain", "Default", &numbers(0..1)).await;

    // Act
    let (status, namespaces) = b.get("/api/v1/resources/namespaces").await;
    let (_, tasks) = b.get("/api/v1/resources/tasks").await;

    // Assert
    assert_eq!(status, StatusCode::OK, "{namespaces}");
    assert_eq!(
        namespaces,
        json!({"namespaces": [{"namespace": "ns1", "queues": 1, "partitions": 3,
                               "messages": {"total": 5, "pending": 2}}]})
    );
    assert_eq!(
        tasks,
        json!({"tasks": [{"task": "t1", "queues": 1, "partitions": 3,
                          "messages": {"total": 5, "pending": 2}}]})
    );
}

/// Depth counts against the named group's cursor, or the cursor furthest behind.
#[actix_rt::test]
async fn queue_depth_counts_pending_for_a_group_or_for_the_slowest_cursor() {
    // Arrange
    let b = TestBroker::start().await;
    b.push("res-depth", "Default", &numbers(0..4)).await;
    let fast = b
        .pop_messages("/api/v1/pop/queue/res-depth?consumerGroup=fast&batch=3")
        .await;
    b.ack_all(&fast, "completed", Some("fast")).await;
    let slow = b.pop_messages("/api/v1/pop/queue/res-depth?batch=1").await;
    b.ack_all(&slow, "completed", None).await;

    // Act
    let (status, group) = b
        .get("/api/v1/resources/queues/res-depth/depth?group=fast")
        .await;
    let (_, worst) = b.get("/api/v1/resources/queues/res-depth/depth").await;
    let (missing, _) = b.get("/api/v1/resources/queues/nope/depth").await;
    let (_, partitions) = b.get("/api/v1/resources/partitions?queue=res-depth").await;

    // Assert
    assert_eq!(status, StatusCode::OK, "{group}");
    assert_eq!(
        group,
        json!({"queue": "res-depth", "group": "fast", "pending": 1, "partitionsPending": 1,
               "conflation": false, "effectivePending": 1,
               "partitions": [{"partition": "Default", "pending": 1}]})
    );
    assert_eq!(worst["pending"], 3, "{worst}");
    assert_eq!(worst["group"], Value::Null);
    assert_eq!(missing, StatusCode::NOT_FOUND);
    assert_eq!(partitions["total"], 1, "{partitions}");
    let p = &partitions["partitions"][0];
    assert_eq!(p["queue"], "res-depth");
    assert_eq!(p["lastOffset"], 3);
    assert_eq!(
        p["consumers"],
        json!([
            {"consumerGroup": "__QUEUE_MODE__", "committed": 0, "lag": 3, "leaseActive": false},
            {"consumerGroup": "fast", "committed": 2, "lag": 1, "leaseActive": false}
        ])
    );
}

/// Deleting a queue removes everything stored for it, dedup rows included, so the same
/// transaction id pushed again is queued, not a duplicate.
#[actix_rt::test]
async fn deleting_a_queue_removes_everything_and_its_transaction_ids_are_free_again() {
    // Arrange
    let b = TestBroker::start().await;
    let item = |txn: &str| json!({"queue": "res-del", "partition": "p", "payload": 1, "transactionId": txn});
    let (_, pushed) = b
        .post(
            "/api/v1/push",
            &json!({"items": [item("t-1"), item("t-2")]}),
        )
        .await;
    assert_eq!(pushed[0]["status"], "queued", "{pushed}");
    let got = b
        .pop_messages("/api/v1/pop/queue/res-del?consumerGroup=g&batch=1")
        .await;
    let (_, dlq) = b
        .post("/api/v1/ack", &{
            let mut e = entry(&got[0], "dlq", Some("poison"));
            e["consumerGroup"] = json!("g");
            e
        })
        .await;
    assert_eq!(dlq[0]["success"], true, "{dlq}");
    assert_eq!(
        sql_count(&b, "SELECT count(*) FROM queen.dead_letters").await,
        1
    );

    // Act
    let (status, body) = delete(&b, "/api/v1/resources/queues/res-del").await;

    // Assert
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(
        body,
        json!({"deleted": true, "queue": "res-del", "existed": true})
    );
    for table in [
        "queues",
        "log_partitions",
        "log_segments",
        "log_consumers",
        "consumer_groups_metadata",
        "dedup",
        "dead_letters",
    ] {
        assert_eq!(
            sql_count(&b, &format!("SELECT count(*) FROM queen.{table}")).await,
            0,
            "{table} is empty"
        );
    }
    let (_, again) = b
        .post("/api/v1/push", &json!({"items": [item("t-1")]}))
        .await;
    assert_eq!(again[0]["status"], "queued", "{again}");
    let popped = b
        .pop_messages("/api/v1/pop/queue/res-del?consumerGroup=g&batch=10")
        .await;
    assert_eq!(popped.len(), 1, "the recreated queue delivers: {popped:?}");
    assert_eq!(popped[0]["transactionId"], "t-1");
    let (_, twice) = delete(&b, "/api/v1/resources/queues/nope").await;
    assert_eq!(
        twice,
        json!({"deleted": true, "queue": "nope", "existed": false})
    );
}

/// A queue deleted again and again while producers push into it leaves no segment behind
/// without its partition, and every partition left holds exactly its offsets: the
/// segments carry no foreign key (`sql/functions/log_partitions_delete_segments_v1.sql`),
/// so this is the appends' partition lock and the delete's trigger at work.
#[actix_rt::test]
async fn a_queue_deleted_while_pushes_land_leaves_no_segment_without_its_partition() {
    // Arrange
    let b = TestBroker::start().await;
    let producer = |k: usize| {
        let b = &b;
        async move {
            let mut failed = Vec::new();
            for round in 0..40 {
                let items: Vec<Value> = (0..5)
                    .map(|i| {
                        json!({"queue": "res-race", "partition": format!("p{}", (k + round) % 8),
                                    "payload": {"k": k, "round": round, "i": i}})
                    })
                    .collect();
                let (status, body) = b.post("/api/v1/push", &json!({"items": items})).await;
                if !status.is_success() {
                    failed.push(format!("{status} {body}"));
                }
            }
            failed
        }
    };
    let deleter = async {
        let mut existed = 0;
        for _ in 0..40 {
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
            let (status, body) = delete(&b, "/api/v1/resources/queues/res-race").await;
            assert_eq!(status, StatusCode::OK, "{body}");
            existed += usize::from(body["existed"] == true);
        }
        existed
    };

    // Act
    let (failed, existed) = tokio::join!(
        futures_util::future::join_all((0..8).map(producer)),
        deleter
    );

    // Assert
    let failed: Vec<String> = failed.into_iter().flatten().collect();
    assert!(failed.is_empty(), "every push is stored: {failed:?}");
    assert!(existed > 0, "some deletes met the queue with data in it");
    assert_eq!(
        sql_count(
            &b,
            "SELECT count(*) FROM queen.log_segments s
             WHERE NOT EXISTS (SELECT 1 FROM queen.log_partitions p WHERE p.id = s.partition_id)"
        )
        .await,
        0,
        "no segment outlives its partition"
    );
    assert_eq!(
        sql_count(
            &b,
            "SELECT count(*) FROM queen.log_partitions p
             WHERE p.last_offset + 1 <> (SELECT coalesce(sum(s.msg_count), 0)
                                         FROM queen.log_segments s WHERE s.partition_id = p.id)"
        )
        .await,
        0,
        "each partition left holds its offsets 0..=last_offset, nothing else"
    );
}
