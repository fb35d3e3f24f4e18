//! The messages endpoints (contract §4.3) over real pushes, pops and acks: listing with
//! status and filters, one message with its payload, and delete (payload erased, offset
//! kept).

use std::collections::BTreeMap;

use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::support::fixtures::numbers;
use crate::support::{payloads, TestBroker};

async fn delete(b: &TestBroker, path: &str) -> (StatusCode, Value) {
    let response = b.http.delete(b.url(path)).send().await.expect("delete");
    let status = response.status();
    (status, response.json().await.unwrap_or(Value::Null))
}

fn by_position(body: &Value) -> BTreeMap<(String, i64), String> {
    body["messages"]
        .as_array()
        .unwrap_or_else(|| panic!("no messages in {body}"))
        .iter()
        .map(|m| {
            (
                (
                    m["partition"].as_str().unwrap().to_owned(),
                    m["offset"].as_i64().unwrap(),
                ),
                m["status"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

/// The listing shows every message with its queue-mode status, and filters by status.
#[actix_rt::test]
async fn the_message_list_shows_queue_mode_status_and_filters_by_it() {
    // Arrange
    let b = TestBroker::start().await;
    let pushed = b.push("msg-a", "p1", &numbers(0..3)).await;
    b.push("msg-a", "p2", &numbers(3..5)).await;
    b.push("msg-b", "Default", &numbers(5..6)).await;
    let done = b
        .pop_messages("/api/v1/pop/queue/msg-a/partition/p1?batch=1")
        .await;
    b.ack_all(&done, "completed", None).await;
    let held = b
        .pop_messages("/api/v1/pop/queue/msg-a/partition/p1?batch=1")
        .await;
    assert_eq!(held.len(), 1);

    // Act
    let (status, all) = b.get("/api/v1/messages?queue=msg-a").await;
    let (_, pending) = b.get("/api/v1/messages?queue=msg-a&status=pending").await;
    let (_, processing) = b
        .get("/api/v1/messages?queue=msg-a&status=processing")
        .await;
    let (_, newest) = b.get("/api/v1/messages?queue=msg-a&limit=2").await;
    let (bad_status, _) = b.get("/api/v1/messages?status=weird").await;
    let (bad_from, _) = b.get("/api/v1/messages?from=later").await;

    // Assert
    assert_eq!(status, StatusCode::OK, "{all}");
    let want: BTreeMap<(String, i64), String> = [
        (("p1".to_owned(), 0), "completed"),
        (("p1".to_owned(), 1), "processing"),
        (("p1".to_owned(), 2), "pending"),
        (("p2".to_owned(), 0), "pending"),
        (("p2".to_owned(), 1), "pending"),
    ]
    .into_iter()
    .map(|(k, v)| (k, v.to_owned()))
    .collect();
    assert_eq!(by_position(&all), want);
    let first_p1 = all["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["partition"] == "p1" && m["offset"] == 0)
        .unwrap();
    assert_eq!(first_p1["transactionId"], pushed[0]["transactionId"]);
    assert_eq!(first_p1["queuePath"], "msg-a/p1");
    assert_eq!(by_position(&pending).len(), 3, "{pending}");
    assert_eq!(by_position(&processing).len(), 1, "{processing}");
    assert!(processing["messages"][0]["leaseExpiresAt"].is_string());
    let newest: Vec<(String, i64)> = by_position(&newest).into_keys().collect();
    assert_eq!(newest, vec![("p2".to_owned(), 0), ("p2".to_owned(), 1)]);
    assert_eq!(bad_status, StatusCode::BAD_REQUEST);
    assert_eq!(bad_from, StatusCode::BAD_REQUEST);
}

/// The detail carries the payload and each group's view; unknown is a 404, bad ids a 400.
#[actix_rt::test]
async fn the_message_detail_carries_the_payload_and_each_group_view() {
    // Arrange
    let b = TestBroker::start().await;
    let pushed = b
        .push("msg-d", "Default", &[json!({"hello": "world"})])
        .await;
    let got = b
        .pop_messages("/api/v1/pop/queue/msg-d?consumerGroup=g")
        .await;
    b.ack_all(&got, "completed", Some("g")).await;
    let path = format!(
        "/api/v1/messages/{}/{}",
        pushed[0]["partitionId"].as_str().unwrap(),
        pushed[0]["transactionId"].as_str().unwrap()
    );

    // Act
    let (status, body) = b.get(&path).await;
    let (missing, missing_body) = b.get("/api/v1/messages/1/unknown").await;
    let (bad, _) = b.get("/api/v1/messages/x/unknown").await;

    // Assert
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["payload"], json!({"hello": "world"}));
    assert_eq!(body["status"], "pending", "queue mode never popped: {body}");
    assert_eq!(body["id"], got[0]["id"]);
    assert_eq!(body["queueConfig"]["retry_limit"], 3, "{body}");
    assert_eq!(
        body["consumerGroups"],
        json!([{"consumerGroup": "g", "committed": 0, "status": "completed",
                "leaseActive": false}])
    );
    assert_eq!(missing, StatusCode::NOT_FOUND);
    assert_eq!(missing_body, json!({"error": "Message not found"}));
    assert_eq!(bad, StatusCode::BAD_REQUEST);
}

/// Deleting a message erases its payload but keeps its offset, so consumers see `null`.
#[actix_rt::test]
async fn deleting_a_message_erases_its_payload_and_keeps_its_offset() {
    // Arrange
    let b = TestBroker::start().await;
    let pushed = b.push("msg-del", "Default", &numbers(0..3)).await;
    let path = format!(
        "/api/v1/messages/{}/{}",
        pushed[1]["partitionId"].as_str().unwrap(),
        pushed[1]["transactionId"].as_str().unwrap()
    );

    // Act
    let (status, body) = delete(&b, &path).await;

    // Assert
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["success"], true);
    assert_eq!(body["transactionId"], pushed[1]["transactionId"]);
    let (_, detail) = b.get(&path).await;
    assert_eq!(detail["payload"], Value::Null, "{detail}");
    let got = b.pop_messages("/api/v1/pop/queue/msg-del?batch=10").await;
    assert_eq!(payloads(&got), vec![json!(0), Value::Null, json!(2)]);
    let acks = b.ack_all(&got, "completed", None).await;
    assert!(acks.iter().all(|a| a["success"] == true), "{acks:?}");
    let (missing, _) = delete(&b, "/api/v1/messages/1/unknown").await;
    assert_eq!(missing, StatusCode::NOT_FOUND);
}
