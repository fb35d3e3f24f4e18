//! Retention: the sweeper deletes segments past `retentionSeconds` (consumed or not) and
//! past `completedRetentionSeconds` once every cursor passed them; consumers behind a
//! deleted prefix continue at the first remaining message and an emptied partition's
//! cursor is sealed; dead letters, traces and legacy dedup rows expire; `/metrics` shows
//! it. Ages are made by moving `created_at` back, never by sleeping.

use std::time::Duration;

use serde_json::json;

use crate::support::fixtures::{configure, metrics, numbers, sql_count};
use crate::support::{eventually, payloads, TestBroker};

/// A sweeper that runs every 100 ms.
pub const FAST_SWEEP: &[(&str, &str)] = &[
    ("QUEEN_RETENTION_INTERVAL_MS", "100"),
    ("QUEEN_RETENTION_PAUSE_MS", "10"),
];

/// An age past the retention these tests configure (60 s) and past the default dedup
/// window (300 s), inside which retention keeps a segment (see `retention_dedup`).
pub const PAST_RETENTION: i64 = 400;

/// Makes the segments of a queue's partition from `base_offset` down older by `secs`.
/// The arithmetic goes through `AT TIME ZONE 'UTC'` (immutable both ways) because Citus
/// refuses a STABLE function of a column in an `UPDATE` of a distributed table, which
/// `timestamptz - interval` is; the result is the same instant on PostgreSQL.
pub async fn age_segments(b: &TestBroker, queue: &str, partition: &str, up_to: i64, secs: i64) {
    b.sql()
        .await
        .execute(
            "UPDATE queen.log_segments s
             SET created_at = (s.created_at AT TIME ZONE 'UTC' - make_interval(secs => $4))
                 AT TIME ZONE 'UTC'
             FROM queen.log_partitions p JOIN queen.queues q ON q.id = p.queue_id
             WHERE s.partition_id = p.id AND q.name = $1 AND p.name = $2 AND s.base_offset <= $3",
            &[&queue, &partition, &up_to, &(secs as f64)],
        )
        .await
        .expect("age segments");
}

/// Segments left in a queue.
pub async fn segments(b: &TestBroker, queue: &str) -> i64 {
    sql_count(
        b,
        &format!(
            "SELECT count(*) FROM queen.log_segments s JOIN queen.log_partitions p ON p.id = s.partition_id
             JOIN queen.queues q ON q.id = p.queue_id WHERE q.name = '{queue}'"
        ),
    )
    .await
}

/// Waits until a queue holds `n` segments.
pub async fn until_segments(b: &TestBroker, queue: &str, n: i64) {
    let left = eventually(Duration::from_secs(20), || async {
        let now = segments(b, queue).await;
        (now == n).then_some(now)
    })
    .await;
    assert_eq!(left, Some(n), "{queue} never got down to {n} segments");
}

/// Segments older than `retentionSeconds` go, consumed or not; a group whose cursor sat in
/// the deleted prefix and queue mode (never popped) continue at the first remaining
/// message; what was removed shows in `/metrics` and its Prometheus text.
#[actix_rt::test]
async fn segments_past_retention_go_and_consumers_behind_continue_at_the_first_remaining_message() {
    // Arrange: two segments (offsets 0-2 and 3-4); group g consumed offset 0.
    let b = TestBroker::start_with(FAST_SWEEP).await;
    configure(&b, "rt-time", json!({"retentionSeconds": 60})).await;
    b.push("rt-time", "p", &numbers(0..3)).await;
    b.push("rt-time", "p", &numbers(3..5)).await;
    let first = b
        .pop_messages("/api/v1/pop/queue/rt-time/partition/p?batch=1&consumerGroup=g&autoAck=true")
        .await;
    assert_eq!(payloads(&first), numbers(0..1));

    // Act: the first segment is now older than the retention and the dedup window.
    age_segments(&b, "rt-time", "p", 0, PAST_RETENTION).await;
    until_segments(&b, "rt-time", 1).await;

    // Assert
    let group = b
        .pop_messages("/api/v1/pop/queue/rt-time/partition/p?batch=10&consumerGroup=g&autoAck=true")
        .await;
    assert_eq!(payloads(&group), numbers(3..5));
    let queue_mode = b
        .pop_messages("/api/v1/pop/queue/rt-time?batch=10&autoAck=true")
        .await;
    assert_eq!(payloads(&queue_mode), numbers(3..5));
    let m = metrics(&b).await;
    let retention = &m["retention"];
    assert!(retention["runs"].as_u64().unwrap() >= 1, "{retention}");
    assert_eq!(retention["removed"]["segments"], 1, "{retention}");
    assert!(retention["removed"]["bytes"].as_u64().unwrap() > 0);
    let queue = retention["queues"]
        .as_array()
        .unwrap()
        .iter()
        .find(|q| q["queue"] == "rt-time")
        .expect("the queue is listed");
    assert_eq!(queue["segmentsRemoved"], 1);
    assert!(retention["tables"]["log_segments"].as_i64().unwrap() > 0);
    let text = b
        .http
        .get(b.url("/metrics/prometheus"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        text.contains("queen_retention_segments_removed_total{queue=\"rt-time\",tenant=\"\"} 1"),
        "{text}"
    );
    assert!(text.contains("queen_table_size_bytes{table=\"log_segments\"}"));
    assert!(text.contains("queen_retention_last_run_timestamp_seconds"));
    assert!(text.contains("queen_retention_runs_total{result=\"ran\"}"));
    // The empty-partition clean-up is off by default: the partition row stays.
    assert_eq!(
        sql_count(
            &b,
            "SELECT count(*) FROM queen.log_partitions WHERE name = 'p'"
        )
        .await,
        1
    );
}

/// A partition emptied by retention seals its cursors at the last offset: nothing old is
/// delivered, and a message pushed afterwards is delivered alone.
#[actix_rt::test]
async fn a_partition_emptied_by_retention_is_sealed_and_delivers_only_what_comes_after() {
    // Arrange
    let b = TestBroker::start_with(FAST_SWEEP).await;
    configure(&b, "rt-empty", json!({"retentionSeconds": 60})).await;
    b.push("rt-empty", "p", &numbers(0..4)).await;
    age_segments(&b, "rt-empty", "p", i64::MAX, PAST_RETENTION).await;

    // Act
    until_segments(&b, "rt-empty", 0).await;
    let nothing = b
        .pop_messages("/api/v1/pop/queue/rt-empty/partition/p?batch=10")
        .await;
    b.push("rt-empty", "p", &numbers(4..5)).await;
    let after = b
        .pop_messages("/api/v1/pop/queue/rt-empty/partition/p?batch=10")
        .await;

    // Assert
    assert!(nothing.is_empty(), "{nothing:?}");
    assert_eq!(payloads(&after), numbers(4..5));
    assert_eq!(after[0]["offset"], json!(4), "{}", after[0]);
}

/// `completedRetentionSeconds` deletes only segments every cursor passed: queue mode and
/// each group registered on the queue; a registered group without a cursor in a
/// partition holds all of it.
#[actix_rt::test]
async fn completed_retention_deletes_only_what_every_cursor_passed() {
    // Arrange: three one-message segments; queue mode consumed all, group g only the first.
    let b = TestBroker::start_with(FAST_SWEEP).await;
    configure(&b, "rt-done", json!({"completedRetentionSeconds": 60})).await;
    for n in 0..3 {
        b.push("rt-done", "p", &numbers(n..n + 1)).await;
    }
    let all = b
        .pop_messages("/api/v1/pop/queue/rt-done?batch=10&autoAck=true")
        .await;
    assert_eq!(all.len(), 3);
    let one = b
        .pop_messages("/api/v1/pop/queue/rt-done?batch=1&consumerGroup=g&autoAck=true")
        .await;
    assert_eq!(payloads(&one), numbers(0..1));
    age_segments(&b, "rt-done", "p", i64::MAX, PAST_RETENTION).await;

    // Act / Assert: only the first goes while g lags.
    until_segments(&b, "rt-done", 2).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(
        segments(&b, "rt-done").await,
        2,
        "g has not passed the rest"
    );
    let rest = b
        .pop_messages("/api/v1/pop/queue/rt-done?batch=10&consumerGroup=g&autoAck=true")
        .await;
    assert_eq!(payloads(&rest), numbers(1..3));
    until_segments(&b, "rt-done", 0).await;

    // A group registered on the queue without a cursor in the partition holds all of it.
    configure(&b, "rt-held", json!({"completedRetentionSeconds": 60})).await;
    b.push("rt-held", "p", &numbers(0..1)).await;
    let got = b
        .pop_messages("/api/v1/pop/queue/rt-held?batch=10&autoAck=true")
        .await;
    assert_eq!(got.len(), 1);
    b.sql()
        .await
        .execute(
            "INSERT INTO queen.consumer_groups_metadata (consumer_group, queue_id)
             SELECT 'late', id FROM queen.queues WHERE name = 'rt-held'",
            &[],
        )
        .await
        .unwrap();
    age_segments(&b, "rt-held", "p", i64::MAX, PAST_RETENTION).await;
    let runs_before = metrics(&b).await["retention"]["runs"].as_u64().unwrap();
    eventually(Duration::from_secs(10), || async {
        let runs = metrics(&b).await["retention"]["runs"].as_u64().unwrap();
        (runs >= runs_before + 3).then_some(())
    })
    .await
    .expect("the sweeper keeps running");
    assert_eq!(segments(&b, "rt-held").await, 1, "'late' has not passed it");
}

/// Dead letters and traces older than their settings go, newer ones stay; the legacy
/// per-message dedup rows of a deleted segment go with it.
#[actix_rt::test]
async fn dead_letters_traces_and_legacy_dedup_rows_expire() {
    // Arrange
    let mut vars = FAST_SWEEP.to_vec();
    vars.push(("QUEEN_DEAD_LETTER_RETENTION_SECS", "60"));
    vars.push(("QUEEN_TRACE_RETENTION_SECS", "60"));
    let b = TestBroker::start_with(&vars).await;
    configure(
        &b,
        "rt-rows",
        json!({"retryLimit": 0, "retentionSeconds": 60}),
    )
    .await;
    b.push("rt-rows", "Default", &numbers(0..2)).await;
    for _ in 0..2 {
        let got = b.pop_messages("/api/v1/pop/queue/rt-rows?batch=1").await;
        assert_eq!(got.len(), 1);
        let m = &got[0];
        let (_, body) = b
            .post(
                "/api/v1/traces",
                &json!({"transactionId": m["transactionId"], "partitionId": m["partitionId"],
                        "traceNames": ["t"], "eventType": "step", "data": {}}),
            )
            .await;
        assert!(!body.is_null());
        b.ack_all(&got, "failed", None).await;
    }
    assert_eq!(
        sql_count(&b, "SELECT count(*) FROM queen.dead_letters").await,
        2
    );
    // One statement at a time, each its own transaction: on the Citus layout the traces
    // (a coordinator table with a foreign key to a reference table) cannot be written
    // after a parallel multi-shard update in the same transaction.
    let sql = b.sql().await;
    for statement in [
        "UPDATE queen.dead_letters
             SET failed_at = (failed_at AT TIME ZONE 'UTC' - interval '2 minutes')
                 AT TIME ZONE 'UTC'
             WHERE message_offset = 0",
        "UPDATE queen.message_traces
             SET created_at = (created_at AT TIME ZONE 'UTC' - interval '2 minutes')
                 AT TIME ZONE 'UTC'
             WHERE id = (SELECT min(id) FROM queen.message_traces)",
        "INSERT INTO queen.dedup (partition_id, transaction_id, message_offset, message_id)
             SELECT p.id, 'legacy', 0, gen_random_uuid() FROM queen.log_partitions p
             JOIN queen.queues q ON q.id = p.queue_id WHERE q.name = 'rt-rows'",
    ] {
        sql.batch_execute(statement).await.unwrap();
    }
    age_segments(&b, "rt-rows", "Default", i64::MAX, PAST_RETENTION).await;

    // Act
    until_segments(&b, "rt-rows", 0).await;
    let settled = eventually(Duration::from_secs(10), || async {
        let dl = sql_count(&b, "SELECT count(*) FROM queen.dead_letters").await;
        let tr = sql_count(&b, "SELECT count(*) FROM queen.message_traces").await;
        (dl == 1 && tr == 1).then_some(())
    })
    .await;

    // Assert
    assert!(
        settled.is_some(),
        "old dead letters and traces were not removed"
    );
    assert_eq!(sql_count(&b, "SELECT count(*) FROM queen.dedup").await, 0);
    let removed = &metrics(&b).await["retention"]["removed"];
    assert_eq!(removed["deadLetters"], 1, "{removed}");
    assert_eq!(removed["traces"], 1, "{removed}");
    assert_eq!(removed["dedupRows"], 1, "{removed}");
}
