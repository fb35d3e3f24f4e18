//! Traces (contract §4.7): events recorded about a popped message, read back per message,
//! per name, and as a list of names.

use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::support::fixtures::numbers;
use crate::support::TestBroker;

fn trace(message: &Value, names: Value, data: Value) -> Value {
    json!({
        "transactionId": message["transactionId"],
        "partitionId": message["partitionId"],
        "consumerGroup": null,
        "traceNames": names,
        "eventType": "step",
        "data": data,
    })
}

/// Recorded events come back per message in order, per name, and in the name list.
#[actix_rt::test]
async fn recorded_traces_read_back_per_message_per_name_and_in_the_name_list() {
    // Arrange
    let b = TestBroker::start().await;
    b.push("tr-q", "Default", &numbers(0..2)).await;
    let got = b.pop_messages("/api/v1/pop/queue/tr-q?batch=2").await;

    // Act
    let (created, first) = b
        .post(
            "/api/v1/traces",
            &trace(&got[0], json!(["order-1"]), json!({"n": 1})),
        )
        .await;
    b.post(
        "/api/v1/traces",
        &trace(&got[0], json!(["order-1", "audit"]), json!({"n": 2})),
    )
    .await;
    b.post(
        "/api/v1/traces",
        &trace(&got[1], json!(["order-1"]), json!({"n": 3})),
    )
    .await;
    let (status, mine) = b
        .get(&format!(
            "/api/v1/traces/{}/{}",
            got[0]["partitionId"].as_str().unwrap(),
            got[0]["transactionId"].as_str().unwrap()
        ))
        .await;
    let (_, named) = b.get("/api/v1/traces/by-name/order-1?limit=2").await;
    let (_, names) = b.get("/api/v1/traces/names").await;

    // Assert
    assert_eq!(created, StatusCode::CREATED, "{first}");
    assert_eq!(first["success"], true);
    assert!(first["traceId"].is_string(), "{first}");
    assert_eq!(status, StatusCode::OK, "{mine}");
    let events = mine["traces"].as_array().unwrap();
    assert_eq!(events.len(), 2, "{mine}");
    assert_eq!(events[0]["data"], json!({"n": 1}));
    assert_eq!(events[1]["trace_names"], json!(["audit", "order-1"]));
    assert_eq!(events[0]["consumer_group"], "__QUEUE_MODE__");
    assert_eq!(events[0]["event_type"], "step");
    assert_eq!(named["total"], 3, "{named}");
    assert_eq!(
        named["traces"].as_array().unwrap().len(),
        2,
        "paged: {named}"
    );
    assert_eq!(named["traces"][0]["data"], json!({"n": 3}), "newest first");
    assert_eq!(named["traces"][0]["queue"], "tr-q");
    let order = names["trace_names"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["trace_name"] == "order-1")
        .cloned()
        .unwrap_or_else(|| panic!("{names}"));
    assert_eq!(order["trace_count"], 3);
    assert_eq!(order["message_count"], 2);
    assert_eq!(names["total"], 2);
}

/// A malformed trace is a 400 and an unknown partition a 404; neither stores anything.
#[actix_rt::test]
async fn a_malformed_trace_or_an_unknown_partition_stores_nothing() {
    // Arrange
    let b = TestBroker::start().await;
    b.push("tr-bad", "Default", &numbers(0..1)).await;
    let got = b.pop_messages("/api/v1/pop/queue/tr-bad").await;
    let mut unknown = trace(&got[0], json!(null), json!({}));
    unknown["partitionId"] = json!("999999");

    // Act
    let (bad_data, _) = b
        .post(
            "/api/v1/traces",
            &trace(&got[0], json!(null), json!([1, 2])),
        )
        .await;
    let (bad_id, _) = b
        .post("/api/v1/traces", &{
            let mut t = trace(&got[0], json!(null), json!({}));
            t["partitionId"] = json!("zero");
            t
        })
        .await;
    let (missing, missing_body) = b.post("/api/v1/traces", &unknown).await;

    // Assert
    assert_eq!(bad_data, StatusCode::BAD_REQUEST);
    assert_eq!(bad_id, StatusCode::BAD_REQUEST);
    assert_eq!(missing, StatusCode::NOT_FOUND, "{missing_body}");
    let (_, names) = b.get("/api/v1/traces/names").await;
    assert_eq!(names["total"], 0, "{names}");
}
