//! An ack of a lease whose span begins after a retention gap: a group's cursor still
//! below segments that retention deleted (tests/broker/retention_concurrency.rs met it
//! on the Citus layout: docs/scale-out.md, "Part nine"). The claim delivers from the
//! first stored message; the ack must settle exactly those messages, by the offsets the
//! segments give them, and release the lease.

use serde_json::json;

use crate::support::TestBroker;

/// Three messages in three segments, the first deleted as retention would before group
/// g read it: the ack of the two delivered settles offsets 1 and 2 (not 0 and 1) and
/// releases the lease, and nothing comes again.
#[actix_rt::test]
async fn an_ack_of_a_lease_beginning_after_a_retention_gap_settles_its_own_messages() {
    // Arrange
    let b = TestBroker::start().await;
    for i in 0..3 {
        let item = json!({"queue": "gap", "partition": "p", "payload": {"i": i},
                          "transactionId": format!("gap-{i}")});
        let (status, body) = b.post("/api/v1/push", &json!({ "items": [item] })).await;
        assert!(status.is_success(), "push answered {status}: {body}");
    }
    let sql = b.sql().await;
    let pid: i64 = sql
        .query_one(
            "SELECT p.id FROM queen.log_partitions p JOIN queen.queues q ON q.id = p.queue_id
             WHERE q.name = 'gap' AND p.name = 'p'",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    let deleted = sql
        .execute(
            "DELETE FROM queen.log_segments WHERE partition_id = $1 AND base_offset = 0",
            &[&pid],
        )
        .await
        .unwrap();
    assert_eq!(deleted, 1, "the first segment was not alone");

    // Act
    let offsets: Vec<Option<i64>> = sql
        .query_one(
            "SELECT queen.log_resolve_offsets_v2($1, -1, 2,
                 ARRAY[queen.txn_hash('gap-1'), queen.txn_hash('gap-2')],
                 ARRAY['gap-1', 'gap-2'], '{}')",
            &[&pid],
        )
        .await
        .unwrap()
        .get(0);
    let popped = b
        .pop_messages("/api/v1/pop/queue/gap?batch=10&consumerGroup=g")
        .await;
    let answers = b.ack_all(&popped, "completed", Some("g")).await;
    let again = b
        .pop_messages("/api/v1/pop/queue/gap?batch=10&consumerGroup=g")
        .await;

    // Assert
    assert_eq!(
        offsets,
        vec![Some(1), Some(2)],
        "offsets counted from the cursor"
    );
    let delivered: Vec<u64> = popped
        .iter()
        .map(|m| m["data"]["i"].as_u64().unwrap())
        .collect();
    assert_eq!(delivered, vec![1, 2]);
    assert!(answers.iter().all(|a| a["success"] == true), "{answers:?}");
    let cursor = sql
        .query_one(
            "SELECT committed, worker_id FROM queen.log_consumers
             WHERE partition_id = $1 AND consumer_group = 'g'",
            &[&pid],
        )
        .await
        .unwrap();
    assert_eq!(cursor.get::<_, i64>(0), 2, "the cursor stopped short");
    assert_eq!(
        cursor.get::<_, Option<String>>(1),
        None,
        "the lease was kept"
    );
    assert!(again.is_empty(), "delivered again: {again:?}");
}
