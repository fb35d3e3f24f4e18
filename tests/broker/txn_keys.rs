//! Segments keep 48-bit transaction-id keys (`txn_keys_hi`, `txn_keys_lo`) instead of
//! 64-bit hashes (`sql/functions/txn_key.sql`). Every push path writes keys and no hashes;
//! segments an earlier broker stored with hashes still dedup, ack on every path and are
//! found by id; and the SQL an earlier broker calls during a rolling upgrade still answers
//! over segments written with keys.

use serde_json::{json, Value};

use queen::segment::{txn_hash, txn_key, KeyColumns};

use crate::support::fixtures::{configure, consumer_row, counter, partition_id};
use crate::support::old_writers::hashed_segment;
use crate::support::{citus, payloads, TestBroker};

/// Pushes `txns` (payload = the id) to one partition in one request.
async fn push_ids(b: &TestBroker, queue: &str, partition: &str, txns: &[&str]) -> Vec<Value> {
    let items: Vec<Value> = txns
        .iter()
        .map(|t| json!({"queue": queue, "partition": partition, "transactionId": t, "payload": t}))
        .collect();
    let (status, body) = b.post("/api/v1/push", &json!({ "items": items })).await;
    assert!(status.is_success(), "push answered {status}: {body}");
    body.as_array().unwrap().clone()
}

/// Every segment of `queue` as (hashes stored?, its keys as SQL reads them), in
/// (partition, offset) order.
async fn stored_keys(b: &TestBroker, queue: &str) -> Vec<(bool, Vec<i64>)> {
    b.sql()
        .await
        .query(
            "SELECT s.txn_hashes IS NOT NULL,
                    queen.segment_txn_keys(s.txn_hashes, s.txn_keys_hi, s.txn_keys_lo)
             FROM queen.log_segments s
             JOIN queen.log_partitions p ON p.id = s.partition_id
             JOIN queen.queues q ON q.id = p.queue_id
             WHERE q.name = $1
             ORDER BY p.name, s.base_offset",
            &[&queue],
        )
        .await
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect()
}

fn keys_of(txns: &[&str]) -> Vec<i64> {
    txns.iter().map(|t| txn_key(t)).collect()
}

/// The broker's keys, `queen.txn_key` and the stored columns read back by SQL agree bit
/// for bit, negative keys and edge values included.
#[actix_rt::test]
async fn the_broker_and_sql_agree_on_keys_and_their_columns() {
    // Arrange
    let b = TestBroker::start().await;
    let ids = ["", "a", "abc", "tx-1", "ünïcødé ✓"];
    let mut keys = keys_of(&ids);
    keys.extend([0, -1, (1 << 47) - 1, -(1 << 47), 0x7fff, 0x8000, 0xffff]);
    let columns = KeyColumns::of(&keys);
    let sql = b.sql().await;

    // Act
    let mut from_sql = Vec::new();
    for id in ids {
        let row = sql
            .query_one("SELECT queen.txn_key($1)", &[&id])
            .await
            .unwrap();
        from_sql.push(row.get::<_, i64>(0));
    }
    let read_back: Vec<i64> = sql
        .query_one(
            "SELECT queen.segment_txn_keys(NULL, $1, $2)",
            &[&columns.hi, &columns.lo],
        )
        .await
        .unwrap()
        .get(0);

    // Assert
    assert_eq!(from_sql, keys_of(&ids));
    assert_eq!(read_back, keys);
}

/// The one-partition statement, the several-partition statement and `log_push_v3` (a
/// queue with a maxSize takes it) each store keys in offset order and no hashes.
#[actix_rt::test]
async fn every_push_path_stores_keys_and_no_hashes() {
    // Arrange
    let b = TestBroker::start().await;
    configure(&b, "tk-full", json!({"maxSize": 1000})).await;

    let many = |pairs: &[(&str, &str)]| {
        let items: Vec<Value> = pairs
            .iter()
            .map(|(p, t)| json!({"queue": "tk-many", "partition": p, "transactionId": t, "payload": 1}))
            .collect();
        let b = &b;
        async move {
            let (status, body) = b.post("/api/v1/push", &json!({ "items": items })).await;
            assert!(status.is_success(), "{body}");
        }
    };

    // Act: the first pushes create their partitions, the second to both partitions is
    // one several-partition statement committed alone.
    push_ids(&b, "tk-one", "p", &["o-1", "o-2", "o-3"]).await;
    many(&[("a", "m-1"), ("b", "m-2")]).await;
    let alone_before = counter(&b, "/push/oneRoundTripCommits").await;
    many(&[("a", "m-3"), ("b", "m-4"), ("a", "m-5")]).await;
    let alone_after = counter(&b, "/push/oneRoundTripCommits").await;
    let function_before = counter(&b, "/push/functionAppends").await;
    push_ids(&b, "tk-full", "p", &["f-1", "f-2"]).await;
    let function_after = counter(&b, "/push/functionAppends").await;

    // Assert
    assert_eq!(
        stored_keys(&b, "tk-one").await,
        vec![(false, keys_of(&["o-1", "o-2", "o-3"]))]
    );
    // The Citus layout leaves the several-partition statement out (each partition is
    // appended by the delegated `log_push_at_v1` on its worker, docs/scale-out.md "What
    // runs"): the keys stored are what this test checks there.
    let several_statements = if citus::layout() { 0 } else { 1 };
    assert_eq!(
        alone_after,
        alone_before + several_statements,
        "one several-partition statement"
    );
    assert_eq!(
        stored_keys(&b, "tk-many").await,
        vec![
            (false, keys_of(&["m-1"])),
            (false, keys_of(&["m-3", "m-5"])),
            (false, keys_of(&["m-2"])),
            (false, keys_of(&["m-4"])),
        ]
    );
    assert_eq!(
        function_after,
        function_before + 1,
        "the maxSize queue took log_push_v3"
    );
    assert_eq!(
        stored_keys(&b, "tk-full").await,
        vec![(false, keys_of(&["f-1", "f-2"]))]
    );
}

/// Segments an earlier broker stored with 64-bit hashes, in a partition this broker
/// writes too: a repeat of their ids is a duplicate, their messages are acked through the
/// serving node (from its lease book), through another node (the whole-lease statement)
/// and item by item (`log_ack_v2`), and the admin lookup finds them by id.
#[actix_rt::test]
async fn segments_stored_with_hashes_still_dedup_ack_on_every_path_and_are_found() {
    // Arrange: a partition warmed up by this broker (so its pops take the single-statement
    // claim, the one that books), then three segments written as an earlier broker did.
    let a = TestBroker::start().await;
    let b = TestBroker::start_on(a.pg.clone(), &[]).await;
    push_ids(&a, "tk-old", "p", &["new-0"]).await;
    let warm = a.pop_messages("/api/v1/pop/queue/tk-old?batch=1").await;
    a.ack_all(&warm, "completed", None).await;
    let sql = a.sql().await;
    hashed_segment(&sql, "tk-old", "p", &["old-1", "old-2"]).await;
    hashed_segment(&sql, "tk-old", "p", &["old-3", "old-4"]).await;
    hashed_segment(&sql, "tk-old", "p", &["old-5", "old-6"]).await;

    // Act + Assert: a repeat through either node is a duplicate.
    let again_a = push_ids(&a, "tk-old", "p", &["old-2"]).await;
    let again_b = push_ids(&b, "tk-old", "p", &["old-5"]).await;
    assert_eq!(again_a[0]["status"], "duplicate", "{again_a:?}");
    assert_eq!(again_b[0]["status"], "duplicate", "{again_b:?}");

    // Through the serving node: the book holds the keys its claim read from the hashes.
    // The Citus layout leaves both one-statement acks out: there every ack is itemized
    // (`log_ack_v2`, delegated to the partition's worker), which still reads the hashes.
    let settled_in_one_statement = if citus::layout() { 0 } else { 1 };
    let known_before = counter(&a, "/acks/knownLease").await;
    let itemized_first = counter(&a, "/acks/itemized").await;
    let first = a.pop_messages("/api/v1/pop/queue/tk-old?batch=2").await;
    assert_eq!(payloads(&first), vec![json!("old-1"), json!("old-2")]);
    let acked = a.ack_all(&first, "completed", None).await;
    assert!(
        acked.iter().all(|x| x["leaseReleased"] == true),
        "{acked:?}"
    );
    assert_eq!(
        counter(&a, "/acks/knownLease").await,
        known_before + settled_in_one_statement
    );

    // Through another node: the whole-lease statement reads the hashes.
    let whole_before = counter(&b, "/acks/wholeLease").await;
    let itemized_second = counter(&b, "/acks/itemized").await;
    let second = a.pop_messages("/api/v1/pop/queue/tk-old?batch=2").await;
    assert_eq!(payloads(&second), vec![json!("old-3"), json!("old-4")]);
    let acked = b.ack_all(&second, "completed", None).await;
    assert!(
        acked.iter().all(|x| x["leaseReleased"] == true),
        "{acked:?}"
    );
    assert_eq!(
        counter(&a, "/acks/itemized").await,
        itemized_first + 1 - settled_in_one_statement
    );
    assert_eq!(
        counter(&b, "/acks/wholeLease").await,
        whole_before + settled_in_one_statement
    );

    // Item by item: a partial ack goes through log_ack_v2's offset resolution (the pop
    // through the node that released the last lease, whose actor knows it is free).
    let itemized_before = counter(&b, "/acks/itemized").await;
    assert_eq!(
        itemized_before,
        itemized_second + 1 - settled_in_one_statement
    );
    let third = b.pop_messages("/api/v1/pop/queue/tk-old?batch=2").await;
    assert_eq!(payloads(&third), vec![json!("old-5"), json!("old-6")]);
    let pid = partition_id(&third[0]);
    let acked = b.ack_all(&third[1..], "completed", None).await;
    assert_eq!(acked[0]["success"], true, "{acked:?}");
    assert_eq!(counter(&b, "/acks/itemized").await, itemized_before + 1);
    let acked = b.ack_all(&third[..1], "completed", None).await;
    assert_eq!(acked[0]["leaseReleased"], true, "{acked:?}");
    assert_eq!(consumer_row(&a, pid, "__QUEUE_MODE__").await, (6, None));

    // The admin lookup by transaction id.
    let (status, found) = a.get(&format!("/api/v1/messages/{pid}/old-4")).await;
    assert!(status.is_success(), "{found}");
    assert_eq!(found["payload"], json!("old-4"));
    assert_eq!(stored_keys(&a, "tk-old").await.len(), 4);
}

/// What a broker of the previous version calls during a rolling upgrade, over segments
/// this version wrote: `log_ack_v2` with 64-bit hashes resolves ids given in another
/// order, and `log_find_offset_v1` finds an id.
#[actix_rt::test]
async fn the_sql_of_the_previous_version_still_answers_over_segments_with_keys() {
    // Arrange: two segments written with keys, and one leased batch over both.
    let b = TestBroker::start().await;
    push_ids(&b, "tk-prev", "p", &["k-0", "k-1"]).await;
    push_ids(&b, "tk-prev", "p", &["k-2"]).await;
    let batch = b.pop_messages("/api/v1/pop/queue/tk-prev?batch=10").await;
    assert_eq!(batch.len(), 3);
    let pid = partition_id(&batch[0]);
    let lease = batch[0]["leaseId"].as_str().unwrap().to_owned();
    let sql = b.sql().await;

    // Act
    let ids = ["k-2", "k-0", "k-1"];
    let hashes: Vec<i64> = ids.iter().map(|t| txn_hash(t)).collect();
    let acks = sql
        .query(
            "SELECT success, lease_released
             FROM queen.log_ack_v2($1, '__QUEUE_MODE__', $2, $3, $4, NULL,
                                   ARRAY['completed', 'completed', 'completed'],
                                   ARRAY[NULL, NULL, NULL]::text[])",
            &[&pid, &lease, &ids.to_vec(), &hashes],
        )
        .await
        .unwrap();
    let found: Option<i64> = sql
        .query_one("SELECT queen.log_find_offset_v1($1, 'k-1')", &[&pid])
        .await
        .unwrap()
        .get(0);

    // Assert
    assert_eq!(acks.len(), 3);
    assert!(acks.iter().all(|r| r.get::<_, bool>(0)), "every item acked");
    assert!(
        acks.iter().any(|r| r.get::<_, bool>(1)),
        "the lease released"
    );
    assert_eq!(consumer_row(&b, pid, "__QUEUE_MODE__").await, (2, None));
    assert_eq!(found, Some(1));
}
