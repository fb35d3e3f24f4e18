//! Pop echoes of the contract (§2.3–2.4): conflation (last value per partition for a
//! group, stored at the group's first registration) and autopilot (the broker picks the
//! knobs the caller left out and says what it used).

use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::support::{payloads, TestBroker};

fn values(range: std::ops::Range<i32>, partition: &str) -> Vec<Value> {
    range.map(|i| json!({"p": partition, "v": i})).collect()
}

/// A conflating group gets only the newest message of each partition, the older ones are
/// retired (never delivered), and every answer, empty ones included, echoes the policy.
#[actix_rt::test]
async fn a_conflating_group_gets_the_newest_message_per_partition_and_an_echo_even_when_empty() {
    // Arrange
    let b = TestBroker::start().await;
    for i in 0..5 {
        b.push("prices", "eur", &[json!({"p": "eur", "v": i})])
            .await;
    }
    b.push("prices", "usd", &values(0..3, "usd")).await;
    let path =
        "/api/v1/pop/queue/prices?consumerGroup=ticker&conflation=true&batch=10&partitions=2";

    // Act
    let (status, first) = b.get(path).await;
    let messages = first["messages"].as_array().cloned().unwrap_or_default();
    let acks = b.ack_all(&messages, "completed", Some("ticker")).await;
    let (empty_status, empty) = b.get(path).await;
    b.push("prices", "usd", &[json!({"p": "usd", "v": 3})])
        .await;
    let (_, later) = b.get(path).await;

    // Assert
    assert_eq!(status, StatusCode::OK, "{first}");
    assert_eq!(first["conflation"], json!(true), "{first}");
    let mut got = payloads(&messages);
    got.sort_by_key(|v| v["p"].as_str().map(str::to_owned));
    assert_eq!(
        got,
        vec![json!({"p": "eur", "v": 4}), json!({"p": "usd", "v": 2})]
    );
    assert!(acks.iter().all(|a| a["success"] == json!(true)), "{acks:?}");
    assert_eq!(
        empty_status,
        StatusCode::OK,
        "an empty conflating answer must have a body"
    );
    assert_eq!(empty["conflation"], json!(true));
    assert_eq!(empty["messages"], json!([]));
    assert_eq!(
        payloads(later["messages"].as_array().unwrap()),
        vec![json!({"p": "usd", "v": 3})]
    );
    b.stop().await;
}

/// The policy stored at first registration wins: a group registered without conflation
/// answers a conflation request with `conflationConflict` (and delivers normally), and a
/// group registered with it conflates even for pops that do not ask.
#[actix_rt::test]
async fn the_policy_stored_at_first_registration_wins_over_later_requests() {
    // Arrange
    let b = TestBroker::start().await;
    b.push("feed", "Default", &values(0..3, "d")).await;
    let plain = b
        .pop_messages("/api/v1/pop/queue/feed?consumerGroup=plain&batch=1")
        .await;
    b.ack_all(&plain, "completed", Some("plain")).await;
    let (_, registered) = b
        .get("/api/v1/pop/queue/feed?consumerGroup=latest&conflation=true&batch=1")
        .await;
    let registered = registered["messages"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    b.ack_all(&registered, "completed", Some("latest")).await;
    b.push("feed", "Default", &values(3..6, "d")).await;

    // Act
    let (status, conflict) = b
        .get("/api/v1/pop/queue/feed?consumerGroup=plain&conflation=true&batch=10")
        .await;
    let unasked = b
        .pop_messages("/api/v1/pop/queue/feed?consumerGroup=latest&batch=10")
        .await;

    // Assert
    assert_eq!(status, StatusCode::OK);
    assert_eq!(conflict["conflationConflict"], json!(true), "{conflict}");
    assert!(conflict.get("conflation").is_none(), "{conflict}");
    let normal: Vec<i64> = payloads(conflict["messages"].as_array().unwrap())
        .iter()
        .map(|v| v["v"].as_i64().unwrap())
        .collect();
    assert_eq!(
        normal,
        vec![1, 2, 3, 4, 5],
        "a non-conflating group gets everything"
    );
    assert_eq!(payloads(&unasked), vec![json!({"p": "d", "v": 5})]);
    b.stop().await;
}

/// Conflation without a consumer group, or with autoAck, is a 400 that changes nothing.
#[actix_rt::test]
async fn conflation_without_a_group_or_with_auto_ack_is_refused() {
    // Arrange
    let b = TestBroker::start().await;
    b.push("strict", "Default", &values(0..2, "d")).await;

    // Act
    let (no_group, no_group_body) = b.get("/api/v1/pop/queue/strict?conflation=true").await;
    let (auto_ack, auto_ack_body) = b
        .get("/api/v1/pop/queue/strict?consumerGroup=g&conflation=true&autoAck=true")
        .await;
    let registered: i64 = b
        .sql()
        .await
        .query_one("SELECT count(*) FROM queen.consumer_groups_metadata", &[])
        .await
        .unwrap()
        .get(0);

    // Assert
    assert_eq!(no_group, StatusCode::BAD_REQUEST);
    assert!(no_group_body["error"]
        .as_str()
        .unwrap()
        .contains("consumerGroup"));
    assert_eq!(auto_ack, StatusCode::BAD_REQUEST);
    assert!(auto_ack_body["error"].as_str().unwrap().contains("autoAck"));
    assert_eq!(registered, 0, "a refused pop registered a group");
    let all = b
        .pop_messages("/api/v1/pop/queue/strict?batch=10&autoAck=true")
        .await;
    assert_eq!(all.len(), 2, "a refused pop consumed messages");
    b.stop().await;
}

/// Autopilot fills in the knobs the caller left out, keeps the ones it gave, and advises a
/// pause only after an empty answer, which it answers with a body.
#[actix_rt::test]
async fn autopilot_chooses_missing_knobs_and_echoes_them_with_a_pause_after_an_empty_answer() {
    // Arrange
    let b = TestBroker::start().await;
    b.push("pilot", "Default", &values(0..150, "d")).await;

    // Act
    let (full_status, full) = b
        .get("/api/v1/pop/queue/pilot?autopilot=true&autoAck=true")
        .await;
    let (_, pinned) = b
        .get("/api/v1/pop/queue/pilot?autopilot=true&batch=7&autoAck=true")
        .await;
    let rest = b
        .pop_messages("/api/v1/pop/queue/pilot?batch=1000&autoAck=true")
        .await;
    let (empty_status, empty) = b.get("/api/v1/pop/queue/pilot?autopilot=true").await;

    // Assert
    assert_eq!(full_status, StatusCode::OK);
    assert_eq!(
        full["autopilot"],
        json!({"partitions": 4, "batch": 100, "waitMs": 0})
    );
    assert_eq!(full["messages"].as_array().unwrap().len(), 100);
    assert_eq!(pinned["autopilot"]["batch"], json!(7));
    assert_eq!(pinned["messages"].as_array().unwrap().len(), 7);
    assert_eq!(rest.len(), 43);
    assert_eq!(
        empty_status,
        StatusCode::OK,
        "an autopilot answer carries its advice"
    );
    assert_eq!(empty["messages"], json!([]));
    assert_eq!(empty["autopilot"]["waitMs"], json!(1000));
    b.stop().await;
}
