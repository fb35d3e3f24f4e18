//! The dead-letter queue listing and message retry (contract §4.2, decision 9.6) over a
//! message really dead-lettered by failed acks past the retry limit.

use reqwest::StatusCode;
use serde_json::{json, Value};

use queen::segment::txn_key;

use crate::support::fixtures::{configure, entry, numbers, partition_id, sql_count};
use crate::support::{payloads, TestBroker};

/// Pushes `["dead", 1, 2]` to a queue with retry limit 1 and fails the first message twice,
/// so it is dead-lettered; then consumes and acks the other two. Returns the dead message.
pub(crate) async fn dead_letter_one(b: &TestBroker, queue: &str) -> Value {
    configure(b, queue, json!({ "retryLimit": 1 })).await;
    b.push(
        queue,
        "Default",
        &[json!({"dead": true}), json!(1), json!(2)],
    )
    .await;
    let path = format!("/api/v1/pop/queue/{queue}?batch=1");
    let mut dead = Value::Null;
    for _ in 0..2 {
        let got = b.pop_messages(&path).await;
        assert_eq!(payloads(&got), vec![json!({"dead": true})]);
        let (_, nack) = b
            .post(
                "/api/v1/ack",
                &entry(&got[0], "failed", Some("handler broke")),
            )
            .await;
        assert_eq!(nack[0]["success"], true, "{nack}");
        dead = got[0].clone();
    }
    let rest = b
        .pop_messages(&format!("/api/v1/pop/queue/{queue}?batch=10"))
        .await;
    assert_eq!(payloads(&rest), numbers(1..3));
    b.ack_all(&rest, "completed", None).await;
    dead
}

/// A message dead-lettered after its retries is listed with its payload, error and count.
#[actix_rt::test]
async fn a_message_past_its_retry_limit_is_listed_in_the_dlq_with_its_payload() {
    // Arrange
    let b = TestBroker::start().await;
    let dead = dead_letter_one(&b, "dlq-list").await;
    b.push("dlq-other", "Default", &numbers(0..1)).await;

    // Act
    let (status, body) = b.get("/api/v1/dlq?queue=dlq-list&limit=100&offset=0").await;
    let (_, other) = b
        .get("/api/v1/dlq?queue=dlq-other&limit=100&offset=0")
        .await;
    let (_, future) = b
        .get("/api/v1/dlq?queue=dlq-list&from=2999-01-01T00%3A00%3A00Z")
        .await;
    let (bad, _) = b.get("/api/v1/dlq?queue=dlq-list&from=someday").await;

    // Assert
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["total"], 1, "{body}");
    let m = &body["messages"][0];
    assert_eq!(m["data"], json!({"dead": true}), "{m}");
    assert_eq!(m["transactionId"], dead["transactionId"]);
    assert_eq!(m["partitionId"], dead["partitionId"]);
    assert_eq!(m["id"], dead["id"]);
    assert_eq!(m["queue"], "dlq-list");
    assert_eq!(m["partition"], "Default");
    assert_eq!(m["consumerGroup"], "__QUEUE_MODE__");
    assert_eq!(m["errorMessage"], "handler broke");
    assert_eq!(m["retryCount"], 2);
    assert!(m["failedAt"].as_str().unwrap().ends_with('Z'), "{m}");
    assert_eq!(
        other,
        json!({"messages": [], "total": 0, "nextOffset": null})
    );
    assert_eq!(future["total"], 0, "{future}");
    assert_eq!(bad, StatusCode::BAD_REQUEST);
}

/// A retry appends the dead message again, so a consumer receives it, and empties the DLQ.
#[actix_rt::test]
async fn retrying_a_dead_letter_brings_it_back_to_a_consumer_and_out_of_the_dlq() {
    // Arrange
    let b = TestBroker::start().await;
    let dead = dead_letter_one(&b, "dlq-retry").await;
    let path = format!(
        "/api/v1/messages/{}/{}/retry",
        dead["partitionId"].as_str().unwrap(),
        dead["transactionId"].as_str().unwrap()
    );

    // Act
    let (status, body) = b.post_raw(&path, "application/json", Vec::new()).await;

    // Assert
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["success"], true);
    assert_eq!(
        body["offset"], 3,
        "appended after the three originals: {body}"
    );
    let (_, dlq) = b.get("/api/v1/dlq?queue=dlq-retry").await;
    assert_eq!(dlq["total"], 0, "{dlq}");
    let back = b.pop_messages("/api/v1/pop/queue/dlq-retry?batch=10").await;
    assert_eq!(payloads(&back), vec![json!({"dead": true})]);
    assert_eq!(
        back[0]["transactionId"], body["transactionId"],
        "the copy's own id"
    );
    assert_ne!(back[0]["transactionId"], dead["transactionId"]);
    assert_eq!(body["retryOf"]["transactionId"], dead["transactionId"]);
    assert_eq!(back[0]["offset"], 3);
    let acks = b.ack_all(&back, "completed", None).await;
    assert_eq!(
        acks[0]["success"], true,
        "acked by transaction id: {acks:?}"
    );
    let (again, again_body) = b.post_raw(&path, "application/json", Vec::new()).await;
    assert_eq!(again, StatusCode::NOT_FOUND);
    assert_eq!(again_body["error"], "Message not found");

    // The copy is stored under its own id's key, as a push stores one: a push of that id
    // is a duplicate, and the lookup by id finds the copy.
    let copy = body["transactionId"].as_str().unwrap();
    let pid = partition_id(&dead);
    let stored: (bool, Vec<i64>) = {
        let row = b
            .sql()
            .await
            .query_one(
                "SELECT s.txn_hashes IS NULL,
                        queen.segment_txn_keys(s.txn_hashes, s.txn_keys_hi, s.txn_keys_lo)
                 FROM queen.log_segments s WHERE s.partition_id = $1 AND s.base_offset = 3",
                &[&pid],
            )
            .await
            .unwrap();
        (row.get(0), row.get(1))
    };
    assert_eq!(stored, (true, vec![txn_key(copy)]));
    let item = json!({"queue": "dlq-retry", "partition": "Default", "transactionId": copy,
                      "payload": 9});
    let (_, pushed) = b.post("/api/v1/push", &json!({ "items": [item] })).await;
    assert_eq!(pushed[0]["status"], "duplicate", "{pushed}");
    let (found_status, found) = b.get(&format!("/api/v1/messages/{pid}/{copy}")).await;
    assert!(found_status.is_success(), "{found}");
    assert_eq!(found["payload"], json!({"dead": true}), "{found}");
}

/// Retrying an unknown message is a 404, a malformed partition id a 400; neither stores.
#[actix_rt::test]
async fn retrying_an_unknown_message_is_not_found_and_a_bad_id_is_a_bad_request() {
    // Arrange
    let b = TestBroker::start().await;
    b.push("dlq-none", "Default", &numbers(0..1)).await;

    // Act
    let (missing, missing_body) = b
        .post_raw(
            "/api/v1/messages/1/nope/retry",
            "application/json",
            Vec::new(),
        )
        .await;
    let (bad, bad_body) = b
        .post_raw(
            "/api/v1/messages/abc/nope/retry",
            "application/json",
            Vec::new(),
        )
        .await;

    // Assert
    assert_eq!(missing, StatusCode::NOT_FOUND, "{missing_body}");
    assert_eq!(missing_body["error"], "Message not found");
    assert_eq!(bad, StatusCode::BAD_REQUEST, "{bad_body}");
    assert_eq!(
        sql_count(&b, "SELECT count(*) FROM queen.log_segments").await,
        1
    );
}

/// On an encrypted queue the DLQ shows the opened payload, and a retry stores it sealed
/// again (for its new message id) and delivers it as pushed.
#[actix_rt::test]
async fn an_encrypted_dead_letter_lists_opened_and_retries_sealed() {
    // Arrange
    let key = (
        "QUEEN_ENCRYPTION_KEY",
        "8f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f0",
    );
    let b = TestBroker::start_with(&[key]).await;
    configure(&b, "dlq-vault", json!({ "encryptionEnabled": true })).await;
    let dead = dead_letter_one(&b, "dlq-vault").await;
    let (_, listed) = b.get("/api/v1/dlq?queue=dlq-vault").await;
    assert_eq!(
        listed["messages"][0]["data"],
        json!({"dead": true}),
        "{listed}"
    );

    // Act
    let (status, body) = b
        .post_raw(
            &format!(
                "/api/v1/messages/{}/{}/retry",
                dead["partitionId"].as_str().unwrap(),
                dead["transactionId"].as_str().unwrap()
            ),
            "application/json",
            Vec::new(),
        )
        .await;

    // Assert
    assert_eq!(status, StatusCode::OK, "{body}");
    let rows = b
        .sql()
        .await
        .query("SELECT codec, blob FROM queen.log_segments", &[])
        .await
        .unwrap();
    for row in rows {
        let blob: Vec<u8> = row.get(1);
        let raw = zstd::decode_all(blob.as_slice()).unwrap();
        assert!(
            !raw.windows(4).any(|w| w == b"dead"),
            "plaintext stored (codec {})",
            row.get::<_, i16>(0)
        );
    }
    let back = b.pop_messages("/api/v1/pop/queue/dlq-vault?batch=10").await;
    assert_eq!(payloads(&back), vec![json!({"dead": true})]);
}
