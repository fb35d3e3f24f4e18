//! A dead-letter retry as two consumer groups at different positions see it: the retry is
//! a new message (a copy with its own transaction id) appended to the partition, and the
//! original keeps its offset and its transaction id, so every group can ack what it gets.

use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::support::fixtures::{consumer_row, entry, offsets, partition_id};
use crate::support::{payloads, TestBroker};

const QUEUE: &str = "dlq-two-groups";

fn pop_path(group: &str) -> String {
    format!("/api/v1/pop/queue/{QUEUE}?consumerGroup={group}&batch=10")
}

/// One ack of `message` for `group` through `POST /api/v1/ack`; asserts it was applied.
async fn ack_one(b: &TestBroker, message: &Value, status: &str, group: &str) {
    let mut body = entry(message, status, Some("handler broke"));
    body["consumerGroup"] = json!(group);
    let (code, verdict) = b.post("/api/v1/ack", &body).await;
    assert_eq!(code, StatusCode::OK, "{verdict}");
    assert_eq!(
        verdict[0]["success"], true,
        "{status} of {message}: {verdict}"
    );
}

/// Group `ahead` dead-letters the first message; group `behind` has popped nothing yet.
/// After the retry, `ahead` receives [1, copy] and `behind` receives [dead, 1, copy]; when
/// `behind` completes the copy and then fails the original (a consumer working a batch
/// concurrently), the nack rewinds `behind` to the original, not to the copy, and after
/// that both groups ack everything and no partition is left leased or behind.
#[actix_rt::test]
async fn a_retried_dead_letter_is_a_new_message_that_groups_at_any_position_ack_normally() {
    // Arrange: offsets 0 = {"dead": true}, 1 = 1; `ahead` files offset 0 as a dead letter.
    let b = TestBroker::start().await;
    b.push(QUEUE, "Default", &[json!({"dead": true}), json!(1)])
        .await;
    let poison = b
        .pop_messages(&format!(
            "/api/v1/pop/queue/{QUEUE}?consumerGroup=ahead&batch=1"
        ))
        .await;
    assert_eq!(payloads(&poison), vec![json!({"dead": true})]);
    ack_one(&b, &poison[0], "dlq", "ahead").await;
    let original = poison[0]["transactionId"].as_str().unwrap().to_owned();
    let pid = partition_id(&poison[0]);

    // Act: retry it, then let each group consume.
    let (status, retried) = b
        .post_raw(
            &format!("/api/v1/messages/{pid}/{original}/retry"),
            "application/json",
            Vec::new(),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{retried}");
    let ahead = b.pop_messages(&pop_path("ahead")).await;
    for m in &ahead {
        ack_one(&b, m, "completed", "ahead").await;
    }
    let ahead_after = b.pop_messages(&pop_path("ahead")).await;

    let behind_first = b.pop_messages(&pop_path("behind")).await;
    assert_eq!(offsets(&behind_first), vec![0, 1, 2], "{behind_first:?}");
    ack_one(&b, &behind_first[2], "completed", "behind").await;
    ack_one(&b, &behind_first[0], "failed", "behind").await;
    let behind_again = b.pop_messages(&pop_path("behind")).await;
    let verdicts = b.ack_all(&behind_again, "completed", Some("behind")).await;
    let behind_after = b.pop_messages(&pop_path("behind")).await;

    // Assert: the deliveries, exactly.
    assert_eq!(offsets(&ahead), vec![1, 2], "{ahead:?}");
    assert_eq!(payloads(&ahead), vec![json!(1), json!({"dead": true})]);
    assert_eq!(
        offsets(&behind_again),
        vec![0, 1, 2],
        "the nack of the original rewinds to it: {behind_again:?}"
    );
    assert!(
        verdicts.iter().all(|v| v["success"] == true),
        "{verdicts:?}"
    );
    assert!(ahead_after.is_empty(), "{ahead_after:?}");
    assert!(behind_after.is_empty(), "{behind_after:?}");
    for group in ["ahead", "behind"] {
        assert_eq!(consumer_row(&b, pid, group).await, (2, None), "{group}");
    }
    // The copy is its own message, and its transaction id names the one it retries.
    let copy = retried["transactionId"].as_str().unwrap();
    assert_ne!(copy, original);
    assert!(
        copy.starts_with(&format!("{original}:retry:")),
        "{copy} names {original}"
    );
    assert_eq!(retried["offset"], 2, "{retried}");
    assert_eq!(retried["retryOf"]["transactionId"], original.as_str());
    assert_eq!(retried["retryOf"]["offset"], 0, "{retried}");
    assert_eq!(behind_first[0]["transactionId"], original.as_str());
    assert_eq!(behind_first[2]["transactionId"], copy);
    assert_eq!(ahead[1]["transactionId"], copy);
    assert_eq!(payloads(&behind_first)[2], json!({"dead": true}));
}
