//! Retention never shortens the dedup window: a segment inside its queue's
//! `dedupWindowSeconds` stays, whatever `retentionSeconds` or `completedRetentionSeconds`
//! say, so a retried push inside the window answers `duplicate` and is not delivered
//! again; once the window has passed over it, retention deletes it as before.

use serde_json::json;

use crate::dedup_window::push_one;
use crate::retention::{age_segments, segments, until_segments, FAST_SWEEP};
use crate::support::fixtures::configure;
use crate::support::{payloads, TestBroker};

#[actix_rt::test]
async fn a_retried_push_inside_the_dedup_window_is_a_duplicate_after_retention_ran() {
    // Arrange: `x` consumed in a queue whose completed retention is shorter than its
    // window, and a control queue whose window is shorter than the segment's age.
    let b = TestBroker::start_with(FAST_SWEEP).await;
    let (kept, control) = ("rd-window", "rd-control");
    configure(
        &b,
        kept,
        json!({"completedRetentionSeconds": 1, "dedupWindowSeconds": 300}),
    )
    .await;
    configure(
        &b,
        control,
        json!({"completedRetentionSeconds": 1, "dedupWindowSeconds": 5}),
    )
    .await;
    let first = push_one(&b, kept, "x", json!("x")).await;
    assert_eq!(first["status"], "queued", "{first}");
    push_one(&b, control, "y", json!("y")).await;
    for queue in [kept, control] {
        let got = b
            .pop_messages(&format!("/api/v1/pop/queue/{queue}?batch=10&autoAck=true"))
            .await;
        assert_eq!(got.len(), 1);
        age_segments(&b, queue, "p", i64::MAX, 10).await;
    }

    // Act: the sweeper deletes the control's segment (so it has run over both), then `x`
    // is pushed again.
    until_segments(&b, control, 0).await;
    let again = push_one(&b, kept, "x", json!("x again")).await;
    let delivered = b
        .pop_messages(&format!("/api/v1/pop/queue/{kept}?batch=10&autoAck=true"))
        .await;

    // Assert
    assert_eq!(again["status"], "duplicate", "{again}");
    assert_eq!(again["messageId"], first["messageId"]);
    assert_eq!(payloads(&delivered), Vec::<serde_json::Value>::new());
    assert_eq!(segments(&b, kept).await, 1);
    b.stop().await;
}
