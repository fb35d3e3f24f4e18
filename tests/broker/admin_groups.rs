//! The consumer-group admin endpoints (contract §4.1) over real pushes, pops and acks:
//! listing with lag, lagging partitions, detail, delete, subscription update and seek.

use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::support::fixtures::{consumer_row, numbers, partition_id, sql_count};
use crate::support::{payloads, TestBroker};

async fn delete(b: &TestBroker, path: &str) -> (StatusCode, Value) {
    let response = b.http.delete(b.url(path)).send().await.expect("delete");
    let status = response.status();
    (status, response.json().await.unwrap_or(Value::Null))
}

/// Consumes `n` messages of a queue as a group and acks them.
async fn consume(b: &TestBroker, queue: &str, group: &str, n: usize) -> Vec<Value> {
    let got = b
        .pop_messages(&format!(
            "/api/v1/pop/queue/{queue}?consumerGroup={group}&batch={n}"
        ))
        .await;
    assert_eq!(got.len(), n, "{got:?}");
    let acks = b.ack_all(&got, "completed", Some(group)).await;
    assert!(acks.iter().all(|a| a["success"] == true), "{acks:?}");
    got
}

/// The list shows one entry per (group, queue) with the number of messages not yet done.
#[actix_rt::test]
async fn the_group_list_reports_the_lag_of_a_group_that_consumed_part_of_a_queue() {
    // Arrange
    let b = TestBroker::start().await;
    b.push("cg-list", "Default", &numbers(0..5)).await;
    consume(&b, "cg-list", "g1", 2).await;

    // Act
    let (status, body) = b.get("/api/v1/consumer-groups").await;

    // Assert
    assert_eq!(status, StatusCode::OK, "{body}");
    let groups = body.as_array().expect("an array");
    let g1 = groups
        .iter()
        .find(|g| g["name"] == "g1")
        .unwrap_or_else(|| panic!("g1 missing: {body}"));
    assert_eq!(g1["queueName"], "cg-list");
    assert_eq!(g1["topics"], json!(["cg-list"]));
    assert_eq!(g1["totalLag"], 3, "{g1}");
    assert_eq!(g1["partitionsWithLag"], 1, "{g1}");
    assert_eq!(g1["members"], 0, "no lease is held: {g1}");
    assert_eq!(g1["subscriptionMode"], "all");
    assert_eq!(g1["state"], "Stable", "{g1}");
}

/// The lagging list names the partition with its offset lag, and honours the minimum age.
#[actix_rt::test]
async fn the_lagging_list_names_partitions_older_than_the_minimum_lag_only() {
    // Arrange
    let b = TestBroker::start().await;
    b.push("cg-lag", "p1", &numbers(0..4)).await;
    consume(&b, "cg-lag", "slow", 1).await;

    // Act
    let (status, now) = b
        .get("/api/v1/consumer-groups/lagging?minLagSeconds=0")
        .await;
    let (_, hour) = b
        .get("/api/v1/consumer-groups/lagging?minLagSeconds=3600")
        .await;
    let (bad, _) = b
        .get("/api/v1/consumer-groups/lagging?minLagSeconds=soon")
        .await;

    // Assert
    assert_eq!(status, StatusCode::OK, "{now}");
    let rows = now.as_array().expect("an array");
    assert_eq!(rows.len(), 1, "{now}");
    assert_eq!(rows[0]["consumer_group"], "slow");
    assert_eq!(rows[0]["queue_name"], "cg-lag");
    assert_eq!(rows[0]["partition_name"], "p1");
    assert_eq!(rows[0]["offset_lag"], 3);
    assert!(rows[0]["oldest_unconsumed_at"].is_string(), "{now}");
    assert_eq!(hour, json!([]));
    assert_eq!(bad, StatusCode::BAD_REQUEST);
}

/// The detail is keyed by queue and shows each partition's consumption; unknown is a 404.
#[actix_rt::test]
async fn the_group_detail_shows_each_partition_and_an_unknown_group_is_not_found() {
    // Arrange
    let b = TestBroker::start().await;
    b.push("cg-detail", "Default", &numbers(0..5)).await;
    consume(&b, "cg-detail", "reader", 2).await;

    // Act
    let (status, body) = b.get("/api/v1/consumer-groups/reader").await;
    let (missing, missing_body) = b.get("/api/v1/consumer-groups/nobody").await;

    // Assert
    assert_eq!(status, StatusCode::OK, "{body}");
    let p = &body["cg-detail"]["partitions"][0];
    assert_eq!(p["partition"], "Default", "{body}");
    assert_eq!(p["totalConsumed"], 2, "{body}");
    assert_eq!(p["offsetLag"], 3, "{body}");
    assert_eq!(p["leaseActive"], false, "{body}");
    assert!(p["lastConsumedAt"].is_string(), "{body}");
    assert_eq!(missing, StatusCode::NOT_FOUND);
    assert_eq!(missing_body["error"], "Consumer group not found");
}

/// Deleting a group with its metadata makes its next pop a first contact from the start.
#[actix_rt::test]
async fn deleting_a_group_with_metadata_forgets_it_and_its_next_pop_starts_over() {
    // Arrange
    let b = TestBroker::start().await;
    b.push("cg-del", "Default", &numbers(0..3)).await;
    consume(&b, "cg-del", "gone", 3).await;

    // Act
    let (status, body) = delete(&b, "/api/v1/consumer-groups/gone?deleteMetadata=true").await;

    // Assert
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["success"], true);
    assert_eq!(body["consumerGroup"], "gone");
    assert_eq!(body["deletedPartitions"], 1);
    assert_eq!(body["metadataDeleted"], true);
    assert_eq!(
        sql_count(
            &b,
            "SELECT count(*) FROM queen.log_consumers WHERE consumer_group = 'gone'"
        )
        .await,
        0
    );
    assert_eq!(
        sql_count(
            &b,
            "SELECT count(*) FROM queen.consumer_groups_metadata WHERE consumer_group = 'gone'"
        )
        .await,
        0
    );
    let again = b
        .pop_messages("/api/v1/pop/queue/cg-del?consumerGroup=gone&batch=10")
        .await;
    assert_eq!(payloads(&again), numbers(0..3));
}

/// Deleting a group on one queue leaves its cursors on other queues alone.
#[actix_rt::test]
async fn deleting_a_group_on_one_queue_keeps_its_cursor_on_another_queue() {
    // Arrange
    let b = TestBroker::start().await;
    b.push("cg-one-a", "Default", &numbers(0..2)).await;
    b.push("cg-one-b", "Default", &numbers(0..2)).await;
    consume(&b, "cg-one-a", "both", 2).await;
    consume(&b, "cg-one-b", "both", 2).await;

    // Act
    let (status, body) = delete(
        &b,
        "/api/v1/consumer-groups/both/queues/cg-one-a?deleteMetadata=false",
    )
    .await;

    // Assert
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["queueName"], "cg-one-a");
    assert_eq!(body["deletedPartitions"], 1);
    assert_eq!(body["metadataDeleted"], false);
    let (_, detail) = b.get("/api/v1/consumer-groups/both").await;
    assert_eq!(
        detail["cg-one-b"]["partitions"][0]["offsetLag"], 0,
        "{detail}"
    );
    assert_eq!(
        sql_count(
            &b,
            "SELECT count(*) FROM queen.consumer_groups_metadata WHERE consumer_group = 'both'"
        )
        .await,
        2,
        "metadata kept"
    );
}

/// A subscription update stores the timestamp; a bad timestamp is a 400 that changes nothing.
#[actix_rt::test]
async fn a_subscription_update_stores_the_timestamp_and_a_bad_one_is_refused() {
    // Arrange
    let b = TestBroker::start().await;
    b.push("cg-sub", "Default", &numbers(0..1)).await;
    consume(&b, "cg-sub", "subbed", 1).await;

    // Act
    let (bad, bad_body) = b
        .post(
            "/api/v1/consumer-groups/subbed/subscription",
            &json!({ "subscriptionTimestamp": "not a time" }),
        )
        .await;
    let (status, body) = b
        .post(
            "/api/v1/consumer-groups/subbed/subscription",
            &json!({ "subscriptionTimestamp": "2026-01-02T03:04:05.000Z" }),
        )
        .await;

    // Assert
    assert_eq!(bad, StatusCode::BAD_REQUEST, "{bad_body}");
    assert!(bad_body["error"].is_string());
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["rowsUpdated"], 1);
    assert_eq!(body["newTimestamp"], "2026-01-02T03:04:05.000Z");
    let (_, list) = b.get("/api/v1/consumer-groups").await;
    let g = list
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["name"] == "subbed")
        .cloned()
        .unwrap();
    assert_eq!(g["subscriptionMode"], "timestamp", "{g}");
}

/// A seek to the end leaves nothing to pop.
#[actix_rt::test]
async fn seeking_to_the_end_leaves_nothing_to_pop() {
    // Arrange
    let b = TestBroker::start().await;
    b.push("cg-end", "Default", &numbers(0..3)).await;
    consume(&b, "cg-end", "skipper", 1).await;
    b.push("cg-end", "Other", &numbers(3..6)).await;

    // Act
    let (status, body) = b
        .post(
            "/api/v1/consumer-groups/skipper/queues/cg-end/seek",
            &json!({ "toEnd": true }),
        )
        .await;

    // Assert
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["seekToEnd"], true);
    assert_eq!(body["partitionsUpdated"], 2, "{body}");
    let (pop, _) = b
        .get("/api/v1/pop/queue/cg-end?consumerGroup=skipper&batch=10")
        .await;
    assert_eq!(pop, StatusCode::NO_CONTENT);
}

/// A seek to a timestamp redelivers from the first message pushed at or after it.
#[actix_rt::test]
async fn seeking_to_a_timestamp_redelivers_from_the_first_message_pushed_since() {
    // Arrange
    let b = TestBroker::start().await;
    b.push("cg-ts", "Default", &numbers(0..3)).await;
    b.push("cg-ts", "Default", &numbers(3..5)).await;
    consume(&b, "cg-ts", "rewinder", 5).await;
    let row = b
        .sql()
        .await
        .query_one(
            "SELECT to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"') \
             FROM queen.log_segments WHERE base_offset = 3",
            &[],
        )
        .await
        .unwrap();
    let second_push: String = row.get(0);

    // Act
    let (status, body) = b
        .post(
            "/api/v1/consumer-groups/rewinder/queues/cg-ts/seek",
            &json!({ "timestamp": second_push }),
        )
        .await;

    // Assert
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["seekToEnd"], false);
    assert_eq!(body["partitionsUpdated"], 1);
    let again = b
        .pop_messages("/api/v1/pop/queue/cg-ts?consumerGroup=rewinder&batch=10")
        .await;
    assert_eq!(payloads(&again), numbers(3..5));
}

/// A seek with neither option is a 400; on an unknown queue a 404; during a live lease a 409;
/// and none of them moves the cursor.
#[actix_rt::test]
async fn a_seek_without_options_on_an_unknown_queue_or_under_a_live_lease_changes_nothing() {
    // Arrange
    let b = TestBroker::start().await;
    b.push("cg-held", "Default", &numbers(0..3)).await;
    let held = b
        .pop_messages("/api/v1/pop/queue/cg-held?consumerGroup=holder&batch=1")
        .await;
    let pid = partition_id(&held[0]);
    let before = consumer_row(&b, pid, "holder").await.0;

    // Act
    let (none, none_body) = b
        .post_raw(
            "/api/v1/consumer-groups/holder/queues/cg-held/seek",
            "application/json",
            Vec::new(),
        )
        .await;
    let (unknown, unknown_body) = b
        .post(
            "/api/v1/consumer-groups/holder/queues/no-such-queue/seek",
            &json!({ "toEnd": true }),
        )
        .await;
    let (leased, leased_body) = b
        .post(
            "/api/v1/consumer-groups/holder/queues/cg-held/seek",
            &json!({ "toEnd": true }),
        )
        .await;

    // Assert
    assert_eq!(none, StatusCode::BAD_REQUEST, "{none_body}");
    assert_eq!(unknown, StatusCode::NOT_FOUND, "{unknown_body}");
    assert_eq!(unknown_body["error"], "Queue not found");
    assert_eq!(leased, StatusCode::CONFLICT, "{leased_body}");
    assert!(leased_body["error"].as_str().unwrap().contains("lease"));
    assert_eq!(consumer_row(&b, pid, "holder").await.0, before);
    let acks = b.ack_all(&held, "completed", Some("holder")).await;
    assert_eq!(acks[0]["success"], true, "the lease survived: {acks:?}");
}

/// A seek on a queue that exists but has no partition yet succeeds and moves nothing.
#[actix_rt::test]
async fn seeking_on_a_queue_without_partitions_succeeds_and_moves_nothing() {
    // Arrange
    let b = TestBroker::start().await;
    let (first, _) = b.get("/api/v1/pop/queue/cg-bare?consumerGroup=early").await;
    assert_eq!(first, StatusCode::NO_CONTENT);
    assert_eq!(
        sql_count(
            &b,
            "SELECT count(*) FROM queen.queues WHERE name = 'cg-bare'"
        )
        .await,
        1,
        "the pop provisioned the queue"
    );

    // Act
    let (status, body) = b
        .post(
            "/api/v1/consumer-groups/early/queues/cg-bare/seek",
            &json!({ "toEnd": true }),
        )
        .await;

    // Assert
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["partitionsUpdated"], 0, "{body}");
}
