//! Completed retention and a group registration in flight: until the registration
//! commits, the sweep does not see the new subscription, so it must not delete what that
//! group has not read (docs/scale-out.md, "Part nine"). Plain PostgreSQL only: on the
//! Citus layout the pushes and pops below wait for the registration's reference-table
//! locks, so there a partition cannot be created meanwhile (not in `ON_CITUS`).

use std::time::Duration;

use serde_json::json;

use crate::support::fixtures::configure;
use crate::support::TestBroker;

/// A group registers on a queue in a transaction left open; meanwhile a partition is
/// created, pushed to and consumed by queue mode past the completed retention, and a
/// sweep runs: it deletes nothing, and the group gets every message after its commit.
#[actix_rt::test]
async fn a_registration_in_flight_keeps_completed_retention_off_its_queue() {
    // Arrange: the broker's own sweeper idle, so the test calls the batch itself.
    let b = TestBroker::start_with(&[("QUEEN_RETENTION_INTERVAL_MS", "3600000")]).await;
    configure(
        &b,
        "rr-reg",
        json!({"completedRetentionSeconds": 1, "dedupWindowSeconds": 1}),
    )
    .await;
    let registrar = b.sql().await;
    let sweeper = b.sql().await;
    registrar.batch_execute("BEGIN").await.unwrap();
    registrar
        .query_one(
            "SELECT queen.log_register_group_at_v1(q.id, 'late', 'all', NULL, false)
             FROM queen.queues q WHERE q.name = 'rr-reg'",
            &[],
        )
        .await
        .unwrap();
    for round in 0..3 {
        b.push("rr-reg", "p", &[json!(round)]).await;
    }
    let popped = b.pop_messages("/api/v1/pop/queue/rr-reg?batch=10").await;
    assert_eq!(popped.len(), 3);
    b.ack_all(&popped, "completed", None).await;
    tokio::time::sleep(Duration::from_millis(1100)).await;

    // Act
    let sweep = "SELECT coalesce(sum(segments), 0)::bigint \
                 FROM queen.retention_segments_v2(NULL, 100, 0, 0, 0)";
    let during: i64 = sweeper.query_one(sweep, &[]).await.unwrap().get(0);
    registrar.batch_execute("COMMIT").await.unwrap();
    let late = b
        .pop_messages("/api/v1/pop/queue/rr-reg?batch=10&consumerGroup=late")
        .await;

    // Assert
    assert_eq!(
        during, 0,
        "the sweep deleted under a registration in flight"
    );
    assert_eq!(late.len(), 3, "the group lost messages: {late:?}");
}
