//! A transaction bundle that rolls back leaves no trace in a node's dedup window: what the
//! window learned while the bundle ran (its own appends, not committed) must not make the
//! node take a later transaction id as new when another node has stored it since.

use serde_json::json;

use crate::dedup_window::{push_one, stored_messages};
use crate::support::{payloads, two_nodes};

#[actix_rt::test]
async fn a_rolled_back_bundle_does_not_teach_the_dedup_window_what_it_never_stored() {
    // Arrange: two nodes on one database; `seed` through a.
    let [a, b] = two_nodes().await;
    let queue = "dedup-rollback";
    let seed = push_one(&a, queue, "seed", json!("seed")).await;
    assert_eq!(seed["status"], "queued", "{seed}");

    // Act: through a, a bundle pushing `a` then `b` to the partition, then an ack with a
    // lease nobody holds (rolled back whole); `c` through b, then `c` again through a.
    let item = |txn: &str| {
        json!({"queue": queue, "partition": "p", "transactionId": txn,
                                  "payload": txn})
    };
    let (status, bundle) = a
        .post(
            "/api/v1/transaction",
            &json!({"operations": [
                {"type": "push", "items": [item("a")]},
                {"type": "push", "items": [item("b")]},
                {"type": "ack", "transactionId": "seed", "partitionId": seed["partitionId"],
                 "status": "completed", "leaseId": "00000000-0000-7000-8000-000000000000"}
            ]}),
        )
        .await;
    let through_b = push_one(&b, queue, "c", json!("c")).await;
    let through_a = push_one(&a, queue, "c", json!("c again")).await;

    // Assert
    assert!(status.is_success(), "{bundle}");
    assert_eq!(bundle["success"], false, "{bundle}");
    assert_eq!(through_b["status"], "queued", "{through_b}");
    assert_eq!(through_b["offset"], 1, "{through_b}");
    assert_eq!(through_a["status"], "duplicate", "{through_a}");
    assert_eq!(through_a["messageId"], through_b["messageId"]);
    assert_eq!(stored_messages(&a).await, 2);
    let popped = a
        .pop_messages(&format!("/api/v1/pop/queue/{queue}?batch=10&autoAck=true"))
        .await;
    assert_eq!(payloads(&popped), vec![json!("seed"), json!("c")]);
}
