//! Push over HTTP: order and offsets within a partition, transaction-id dedup, and the
//! 400/404 answers that must store nothing. Pop and ack appear only to read messages back.

use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::support::{payloads, TestBroker};

/// Fifty pushes of one to seven messages pop back in push order with offsets 0..N.
#[actix_rt::test]
async fn messages_pushed_in_fifty_requests_pop_back_in_push_order_with_dense_offsets() {
    // Arrange
    let b = TestBroker::start().await;
    let mut total = 0u64;
    for push in 0..50u64 {
        let size = 1 + push % 7;
        let batch: Vec<Value> = (total..total + size).map(|n| json!({ "n": n })).collect();
        let answers = b.push("fifo", "lane", &batch).await;
        let offsets: Vec<u64> = answers
            .iter()
            .map(|a| a["offset"].as_u64().unwrap())
            .collect();
        assert_eq!(
            offsets,
            (total..total + size).collect::<Vec<_>>(),
            "push {push}"
        );
        total += size;
    }

    // Act: drain in batches that do not line up with the pushes.
    let mut popped: Vec<Value> = Vec::new();
    for _ in 0..20 {
        let messages = b
            .pop_messages("/api/v1/pop/queue/fifo/partition/lane?batch=37")
            .await;
        if messages.is_empty() {
            break;
        }
        let answers = b.ack_all(&messages, "completed", None).await;
        assert!(answers.iter().all(|a| a["success"] == true), "{answers:?}");
        popped.extend(messages);
    }

    // Assert
    let want: Vec<Value> = (0..total).map(|n| json!({ "n": n })).collect();
    assert_eq!(payloads(&popped), want);
    let offsets: Vec<u64> = popped
        .iter()
        .map(|m| m["offset"].as_u64().unwrap())
        .collect();
    assert_eq!(offsets, (0..total).collect::<Vec<_>>());
}

/// A transactionId pushed again in a later request is a duplicate of the first message.
#[actix_rt::test]
async fn a_transaction_id_pushed_again_in_a_later_request_is_a_duplicate_of_the_original() {
    // Arrange
    let b = TestBroker::start().await;
    let first = push_items(
        &b,
        &[json!({"queue": "dedup-across", "partition": "p", "transactionId": "tx-1", "payload": "original"})],
    )
    .await;
    assert_eq!(first[0]["status"], "queued");

    // Act
    let again = push_items(
        &b,
        &[json!({"queue": "dedup-across", "partition": "p", "transactionId": "tx-1", "payload": "retry"})],
    )
    .await;

    // Assert
    assert_eq!(again[0]["status"], "duplicate", "{again:?}");
    assert_eq!(again[0]["messageId"], first[0]["messageId"]);
    assert_eq!(again[0]["partitionId"], first[0]["partitionId"]);
    assert_eq!(again[0]["offset"], 0);
    assert_eq!(
        count(
            &b,
            "SELECT coalesce(sum(msg_count), 0)::bigint FROM queen.log_segments"
        )
        .await,
        1
    );
    let popped = b
        .pop_messages("/api/v1/pop/queue/dedup-across?batch=10")
        .await;
    assert_eq!(payloads(&popped), vec![json!("original")]);
    assert_eq!(popped[0]["id"], first[0]["messageId"]);
    b.ack_all(&popped, "completed", None).await;
    assert!(b
        .pop_messages("/api/v1/pop/queue/dedup-across?batch=10")
        .await
        .is_empty());
}

/// Within one request, the first occurrence of a transactionId wins and later ones are duplicates.
#[actix_rt::test]
async fn within_one_request_the_first_occurrence_of_a_transaction_id_wins() {
    // Arrange
    let b = TestBroker::start().await;
    let item = |txn: &str, payload: i64| json!({"queue": "dedup-within", "partition": "p", "transactionId": txn, "payload": payload});

    // Act
    let answers = push_items(&b, &[item("x", 1), item("y", 2), item("x", 3)]).await;

    // Assert
    let statuses: Vec<&Value> = answers.iter().map(|a| &a["status"]).collect();
    assert_eq!(statuses, vec!["queued", "queued", "duplicate"]);
    assert_eq!(answers[2]["messageId"], answers[0]["messageId"]);
    let indices: Vec<&Value> = answers.iter().map(|a| &a["index"]).collect();
    assert_eq!(indices, vec![0, 1, 2]);
    assert_eq!(
        count(
            &b,
            "SELECT coalesce(sum(msg_count), 0)::bigint FROM queen.log_segments"
        )
        .await,
        2
    );
    let popped = b
        .pop_messages("/api/v1/pop/queue/dedup-within?batch=10")
        .await;
    assert_eq!(payloads(&popped), vec![json!(1), json!(2)]);
}

/// Malformed push bodies answer 400 with a JSON error and store nothing at all.
#[actix_rt::test]
async fn malformed_push_bodies_answer_400_with_a_json_error_and_store_nothing() {
    // Arrange
    let b = TestBroker::start().await;
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("not JSON", b"{\"items\": [".to_vec()),
        ("items missing", b"{}".to_vec()),
        ("items not an array", br#"{"items": {"queue": "ok"}}"#.to_vec()),
        ("queue not a string", br#"{"items": [{"queue": 42, "payload": 1}]}"#.to_vec()),
        ("queue missing", br#"{"items": [{"payload": 1}]}"#.to_vec()),
        ("queue with a slash", br#"{"items": [{"queue": "a/b", "payload": 1}]}"#.to_vec()),
        ("queue empty", br#"{"items": [{"queue": "", "payload": 1}]}"#.to_vec()),
        (
            "partition with a slash",
            br#"{"items": [{"queue": "ok", "partition": "p/1", "payload": 1}]}"#.to_vec(),
        ),
        (
            "partition empty",
            br#"{"items": [{"queue": "ok", "partition": "", "payload": 1}]}"#.to_vec(),
        ),
        (
            "partition not a string",
            br#"{"items": [{"queue": "ok", "partition": 3, "payload": 1}]}"#.to_vec(),
        ),
        (
            "transactionId not a string",
            br#"{"items": [{"queue": "ok", "transactionId": 5, "payload": 1}]}"#.to_vec(),
        ),
        (
            "traceId not a UUID",
            br#"{"items": [{"queue": "ok", "traceId": "not-a-uuid", "payload": 1}]}"#.to_vec(),
        ),
        (
            "traceId not a string",
            br#"{"items": [{"queue": "ok", "traceId": 7, "payload": 1}]}"#.to_vec(),
        ),
        (
            "a valid item followed by a bad one",
            br#"{"items": [{"queue": "ok", "payload": 1}, {"queue": "ok", "traceId": "nope", "payload": 2}]}"#
                .to_vec(),
        ),
    ];

    for (label, body) in cases {
        // Act
        let (status, answer) = b.post_raw("/api/v1/push", "application/json", body).await;

        // Assert
        assert_eq!(status, StatusCode::BAD_REQUEST, "{label}: {answer}");
        assert!(
            answer["error"].as_str().is_some_and(|e| !e.is_empty()),
            "{label}: no JSON error in {answer}"
        );
    }
    assert_nothing_stored(&b).await;
}

/// An empty items array answers an empty array and stores nothing.
#[actix_rt::test]
async fn an_empty_items_array_answers_an_empty_array() {
    // Arrange
    let b = TestBroker::start().await;

    // Act
    let (status, answer) = b.post("/api/v1/push", &json!({ "items": [] })).await;

    // Assert
    assert!(status.is_success(), "{status}: {answer}");
    assert_eq!(answer, json!([]));
    assert_nothing_stored(&b).await;
}

/// A binary "QPB1" push body is refused with a JSON 400, whatever its content type.
#[actix_rt::test]
async fn a_binary_qpb1_push_body_is_refused_with_a_json_400() {
    // Arrange
    let b = TestBroker::start().await;
    let mut body = b"QPB1".to_vec();
    body.extend_from_slice(&[1, 0, 0, 0, 0, 0, 0, 0, 1, 2, 3]);

    for content_type in ["application/x-queen-push", "application/json"] {
        // Act
        let (status, answer) = b.post_raw("/api/v1/push", content_type, body.clone()).await;

        // Assert
        assert_eq!(status, StatusCode::BAD_REQUEST, "{content_type}: {answer}");
        assert!(
            answer["error"].as_str().is_some_and(|e| !e.is_empty()),
            "{content_type}: no JSON error in {answer}"
        );
    }
    assert_nothing_stored(&b).await;
}

/// An unknown route answers 404 with the JSON error no_such_route.
#[actix_rt::test]
async fn an_unknown_route_answers_404_with_no_such_route() {
    // Arrange
    let b = TestBroker::start().await;

    // Act
    let (get_status, get_body) = b.get("/api/v1/no-such-thing").await;
    let (post_status, post_body) = b.post("/api/v2/push", &json!({ "items": [] })).await;

    // Assert
    assert_eq!(get_status, StatusCode::NOT_FOUND);
    assert_eq!(get_body["error"], "no_such_route", "{get_body}");
    assert_eq!(get_body["path"], "/api/v1/no-such-thing", "{get_body}");
    assert_eq!(post_status, StatusCode::NOT_FOUND);
    assert_eq!(post_body["error"], "no_such_route", "{post_body}");
}

/// The partitionId a push answers is the same decimal string the pop reports.
#[actix_rt::test]
async fn the_partition_id_a_push_answers_is_the_string_the_pop_reports() {
    // Arrange
    let b = TestBroker::start().await;
    let answers = b.push("ids", "P7", &[json!("a"), json!("b")]).await;
    let other = b.push("ids", "P8", &[json!("c")]).await;
    let pushed = answers[0]["partitionId"]
        .as_str()
        .expect("partitionId is a string")
        .to_owned();
    assert_eq!(answers[1]["partitionId"], pushed.as_str());
    assert_ne!(other[0]["partitionId"], pushed.as_str());

    // Act
    let (status, body) = b.get("/api/v1/pop/queue/ids/partition/P7?batch=10").await;

    // Assert
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["partitionId"], pushed.as_str());
    let messages = body["messages"].as_array().expect("messages");
    assert_eq!(payloads(messages), vec![json!("a"), json!("b")]);
    for m in messages {
        assert_eq!(m["partitionId"], pushed.as_str(), "{m}");
        assert_eq!(m["partition"], "P7");
    }
    let stored: i64 = b
        .sql()
        .await
        .query_one(
            "SELECT p.id FROM queen.log_partitions p JOIN queen.queues q ON q.id = p.queue_id \
             WHERE q.name = 'ids' AND p.name = 'P7'",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(pushed, stored.to_string());
}

/// Posts push items as given and asserts a 201; returns the per-item answers.
async fn push_items(b: &TestBroker, items: &[Value]) -> Vec<Value> {
    let (status, body) = b.post("/api/v1/push", &json!({ "items": items })).await;
    assert_eq!(
        status,
        StatusCode::CREATED,
        "push answered {status}: {body}"
    );
    let answers = body.as_array().expect("push answers an array").clone();
    assert_eq!(answers.len(), items.len());
    answers
}

/// A single `count(*)`.
async fn count(b: &TestBroker, query: &str) -> i64 {
    b.sql().await.query_one(query, &[]).await.unwrap().get(0)
}

/// No queue, partition, segment or dedup row exists.
async fn assert_nothing_stored(b: &TestBroker) {
    for table in ["queues", "log_partitions", "log_segments", "dedup"] {
        let n = count(b, &format!("SELECT count(*) FROM queen.{table}")).await;
        assert_eq!(n, 0, "queen.{table} has {n} rows");
    }
}
