//! The idle-group sweep (`QUEEN_IDLE_GROUP_SECS`) forgets abandoned groups, not waiting
//! ones: a group long-polling an empty queue is active, keeps its cursor, and its next
//! pop after a push gets only the new message.

use std::time::Duration;

use serde_json::json;

use crate::retention::FAST_SWEEP;
use crate::support::fixtures::numbers;
use crate::support::{payloads, TestBroker};

#[actix_rt::test]
async fn a_group_long_polling_an_empty_queue_is_not_forgotten_as_idle() {
    // Arrange: a 5 s idle limit; group g consumes the three messages there are.
    let mut vars = FAST_SWEEP.to_vec();
    vars.push(("QUEEN_IDLE_GROUP_SECS", "5"));
    let b = TestBroker::start_with(&vars).await;
    let queue = "idle-waiting";
    b.push(queue, "p", &numbers(0..3)).await;
    let first = b
        .pop_messages(&format!(
            "/api/v1/pop/queue/{queue}?consumerGroup=g&batch=10&autoAck=true"
        ))
        .await;
    assert_eq!(payloads(&first), numbers(0..3));

    // Act: g long-polls the empty queue for twice the idle limit, then one more message.
    let waited = tokio::time::Instant::now();
    let empty = b
        .pop_messages(&format!(
            "/api/v1/pop/queue/{queue}?consumerGroup=g&batch=10&autoAck=true&wait=true&timeout=10000"
        ))
        .await;
    let waited = waited.elapsed();
    b.push(queue, "p", &[json!(3)]).await;
    let next = b
        .pop_messages(&format!(
            "/api/v1/pop/queue/{queue}?consumerGroup=g&batch=10&autoAck=true"
        ))
        .await;

    // Assert
    assert!(empty.is_empty(), "{empty:?}");
    assert!(
        waited >= Duration::from_secs(9),
        "the long-poll ended after {waited:?}"
    );
    assert_eq!(payloads(&next), vec![json!(3)]);
    b.stop().await;
}
