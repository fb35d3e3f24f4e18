//! The two entry points the broker calls bare on the Citus layout so that Citus delegates
//! them whole to the partition's worker (docs/scale-out.md, "The model"):
//! `queen.log_ack_v3` (the ack with its tenant check and durability choice inside) and
//! `queen.log_pop_at_v1` (the hot-list claim of one candidate). Called here directly, on
//! plain PostgreSQL and, in the harness's Citus mode, on the layout.

use serde_json::{json, Value};
use tokio_postgres::Client;

use queen::segment::txn_hash;

use crate::support::fixtures::{consumer_row, partition_id};
use crate::support::{citus, TestBroker};

/// Pushes `txns` (payload = the id) to one partition of `queue` in one request.
async fn push_ids(b: &TestBroker, queue: &str, partition: &str, txns: &[&str]) {
    let items: Vec<Value> = txns
        .iter()
        .map(|t| json!({"queue": queue, "partition": partition, "transactionId": t, "payload": t}))
        .collect();
    let (status, body) = b.post("/api/v1/push", &json!({ "items": items })).await;
    assert!(status.is_success(), "push answered {status}: {body}");
}

/// The tenant that owns `queue` and the id of its partition `partition`.
async fn owner_and_id(sql: &Client, queue: &str, partition: &str) -> (String, i64) {
    let row = sql
        .query_one(
            "SELECT q.tenant, p.id FROM queen.log_partitions p
             JOIN queen.queues q ON q.id = p.queue_id
             WHERE q.name = $1 AND p.name = $2",
            &[&queue, &partition],
        )
        .await
        .unwrap();
    (row.get(0), row.get(1))
}

/// `queen.log_ack_v3` on `client` for every id of `txns`, completed, under `lease`.
const ACK_V3: &str = "SELECT success, lease_released
     FROM queen.log_ack_v3($1, '__QUEUE_MODE__', $2, $3, $4, NULL,
                           array_fill('completed'::text, ARRAY[cardinality($3::text[])]),
                           array_fill(NULL::text, ARRAY[cardinality($3::text[])]),
                           $5, $6)";

/// `log_ack_v3` touches nothing for another tenant (no row back), and for the
/// partition's tenant acks as `log_ack_v2` does; asked to relax, it sets the caller's
/// transaction's `synchronous_commit` off (seen on PostgreSQL, where the caller's
/// transaction is the function's; on the layout it is the worker's).
#[actix_rt::test]
async fn log_ack_v3_acks_only_for_the_partitions_tenant_and_relaxes_the_commit_when_asked() {
    // Arrange: two messages leased by a pop.
    let b = TestBroker::start().await;
    push_ids(&b, "de-ack", "p", &["a-0", "a-1"]).await;
    let batch = b.pop_messages("/api/v1/pop/queue/de-ack?batch=10").await;
    assert_eq!(batch.len(), 2);
    let pid = partition_id(&batch[0]);
    let lease = batch[0]["leaseId"].as_str().unwrap().to_owned();
    let mut sql = b.sql().await;
    let (tenant, _) = owner_and_id(&sql, "de-ack", "p").await;
    let ids = vec!["a-0", "a-1"];
    let hashes: Vec<i64> = ids.iter().map(|t| txn_hash(t)).collect();
    let stranger = format!("{tenant}-other");

    // Act
    let refused = sql
        .query(ACK_V3, &[&pid, &lease, &ids, &hashes, &stranger, &true])
        .await
        .unwrap();
    let after_refusal = consumer_row(&b, pid, "__QUEUE_MODE__").await;
    let txn = sql.transaction().await.unwrap();
    let acked = txn
        .query(ACK_V3, &[&pid, &lease, &ids, &hashes, &tenant, &true])
        .await
        .unwrap();
    let setting: String = txn
        .query_one("SELECT current_setting('synchronous_commit')", &[])
        .await
        .unwrap()
        .get(0);
    txn.commit().await.unwrap();

    // Assert
    assert!(refused.is_empty(), "another tenant's ack answered rows");
    assert_eq!(
        after_refusal,
        (-1, Some(lease.clone())),
        "the lease was touched"
    );
    assert_eq!(acked.len(), 2);
    assert!(
        acked.iter().all(|r| r.get::<_, bool>(0)),
        "every item acked"
    );
    assert!(
        acked.iter().any(|r| r.get::<_, bool>(1)),
        "the lease released"
    );
    assert_eq!(consumer_row(&b, pid, "__QUEUE_MODE__").await, (1, None));
    if !citus::layout() {
        assert_eq!(setting, "off");
    }
}

/// A claim through `queen.log_pop_at_v1`: its one candidate as `log_pop_list_v2` answers
/// it, the slices then one verdict (`claimed`), and `drained` for a partition of another
/// queue, which it leaves alone.
#[actix_rt::test]
async fn log_pop_at_v1_claims_its_one_candidate_as_the_list_driver_does() {
    // Arrange: three messages in de-pop/p, one in de-other/q.
    let b = TestBroker::start().await;
    push_ids(&b, "de-pop", "p", &["p-0", "p-1", "p-2"]).await;
    push_ids(&b, "de-other", "q", &["q-0"]).await;
    let sql = b.sql().await;
    let (tenant, pid) = owner_and_id(&sql, "de-pop", "p").await;
    let (_, other) = owner_and_id(&sql, "de-other", "q").await;
    let pop_at = "SELECT verdict, (slice).partition_id, (slice).take
         FROM queen.log_pop_at_v1(
             ROW($1::text, '__QUEUE_MODE__', 'w-1', 10, 1, NULL, false, 'all', NULL)
                 ::queen.log_pop_args,
             'de-pop', $2, false)";

    // Act
    let foreign = sql.query(pop_at, &[&tenant, &other]).await.unwrap();
    let claimed = sql.query(pop_at, &[&tenant, &pid]).await.unwrap();

    // Assert
    let verdicts = |rows: &[tokio_postgres::Row]| -> Vec<(String, i64)> {
        rows.iter()
            .filter(|r| r.get::<_, String>(0) != "row")
            .map(|r| (r.get(0), r.get(1)))
            .collect()
    };
    assert_eq!(verdicts(&foreign), [("drained".to_owned(), other)]);
    assert_eq!(
        foreign.len(),
        1,
        "a slice of another queue's partition came back"
    );
    assert_eq!(verdicts(&claimed), [("claimed".to_owned(), pid)]);
    let taken: i32 = claimed
        .iter()
        .filter(|r| r.get::<_, String>(0) == "row")
        .map(|r| r.get::<_, i32>(2))
        .sum();
    assert_eq!(taken, 3);
    assert_eq!(
        consumer_row(&b, pid, "__QUEUE_MODE__").await,
        (-1, Some("w-1".to_owned()))
    );
}
