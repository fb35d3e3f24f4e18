//! Versioned migrations: a database whose schema is main's as of commit 8f894d1 (every
//! `sql/` file applied at each start, no history) upgrades without losing data; a start
//! on an up-to-date database takes no table lock; nodes starting together apply each
//! migration once.

use std::time::Duration;

use serde_json::{json, Value};

use queen::db::schema::FILES;

use crate::support::old_writers::{old_push_v1, old_push_v2};
use crate::support::{payloads, postgres, TestBroker};

/// Every `sql/` file of main at 8f894d1, concatenated in order (`git show 8f894d1:sql/…`).
const OLD_SCHEMA: &str = include_str!("upgrade/schema_8f894d1.sql");

/// Tables whose rows an upgrade must keep.
const TABLES: &[&str] = &[
    "queues",
    "log_partitions",
    "log_segments",
    "log_consumers",
    "consumer_groups_metadata",
    "dedup",
    "dead_letters",
    "message_traces",
    "system_state",
];

/// An old database with legacy and current segments, a cursor, a dead letter and a trace
/// upgrades: every row stays, messages pop from where the cursor was, transaction ids of
/// both kinds of segment still dedup, and every file is recorded once.
#[actix_rt::test]
async fn a_database_of_main_8f894d1_with_data_upgrades_and_loses_nothing() {
    // Arrange: main's schema as its installer left it, and data written by its functions.
    let pg = postgres::fresh_database().await;
    let sql = connect(&pg).await;
    sql.batch_execute(OLD_SCHEMA)
        .await
        .expect("old schema applies");
    sql.batch_execute(
        "CREATE TABLE queen.schema_files (file text PRIMARY KEY, checksum text NOT NULL,
             applied_at timestamptz NOT NULL)",
    )
    .await
    .unwrap();
    let legacy_ids = old_push_v1(&sql, "up", "legacy", &["a", "b", "c"]).await;
    old_push_v2(&sql, "up", "p2", None, &["x0", "x1", "x2", "x3"]).await;
    sql.batch_execute(
        "INSERT INTO queen.consumer_groups_metadata (consumer_group, queue_id)
             SELECT 'g', id FROM queen.queues WHERE name = 'up';
         INSERT INTO queen.log_consumers (partition_id, consumer_group, committed)
             SELECT id, 'g', 1 FROM queen.log_partitions WHERE name = 'p2';
         INSERT INTO queen.dead_letters (partition_id, consumer_group, message_offset,
                 transaction_id, segment_base, codec, created_at, blob)
             SELECT s.partition_id, '__QUEUE_MODE__', 0, 'x0', 0, s.codec, s.created_at, s.blob
             FROM queen.log_segments s JOIN queen.log_partitions p ON p.id = s.partition_id
             WHERE p.name = 'p2';
         INSERT INTO queen.message_traces (tenant, partition_id, transaction_id,
                 consumer_group, event_type, data)
             SELECT '', id, 'x0', '__QUEUE_MODE__', 'info', '{\"step\":1}'
             FROM queen.log_partitions WHERE name = 'p2';",
    )
    .await
    .unwrap();
    let before = counts(&sql).await;

    // Act: a broker of this branch starts on it.
    let b = TestBroker::start_on(pg.clone(), &[]).await;

    // Assert: nothing lost, everything recorded once.
    assert_eq!(counts(&sql).await, before);
    let recorded: i64 = sql
        .query_one(
            "SELECT count(DISTINCT version) FROM queen.schema_migrations",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(recorded as usize, FILES.len());
    let group = b
        .pop_messages("/api/v1/pop/queue/up/partition/p2?batch=10&consumerGroup=g&autoAck=true")
        .await;
    assert_eq!(payloads(&group), vec![json!("x2"), json!("x3")]);
    let legacy = b
        .pop_messages("/api/v1/pop/queue/up/partition/legacy?batch=10")
        .await;
    assert_eq!(payloads(&legacy), vec![json!("a"), json!("b"), json!("c")]);
    let acks = b.ack_all(&legacy, "completed", None).await;
    assert!(acks.iter().all(|a| a["success"] == true), "{acks:?}");
    let again_legacy = push_one(&b, "legacy", "b").await;
    assert_eq!(again_legacy["status"], "duplicate", "{again_legacy}");
    assert_eq!(again_legacy["messageId"], json!(legacy_ids[1].to_string()));
    let again_v2 = push_one(&b, "p2", "x1").await;
    assert_eq!(again_v2["status"], "duplicate", "{again_v2}");
    let (_, dlq) = b.get("/api/v1/dlq?queue=up").await;
    assert_eq!(dlq["total"], 1, "{dlq}");
    b.stop().await;
}

/// On an up-to-date database a start reads the history and nothing else: it starts while
/// another session holds an exclusive lock on the segments table (the old installer's
/// `ALTER TABLE` waited behind it), and records nothing again.
#[actix_rt::test]
async fn a_start_on_an_up_to_date_database_takes_no_table_lock() {
    // Arrange: a migrated database, and a session holding the hottest table.
    let pg = postgres::fresh_database().await;
    let first = TestBroker::start_on(pg.clone(), &[]).await;
    first.stop().await;
    let sql = connect(&pg).await;
    let history_before = history(&sql).await;
    let mut holder = connect(&pg).await;
    let tx = holder.transaction().await.unwrap();
    tx.batch_execute(
        "LOCK TABLE queen.log_segments, queen.log_consumers, queen.queues IN ACCESS EXCLUSIVE MODE",
    )
    .await
    .unwrap();

    // Act
    let second = tokio::time::timeout(
        Duration::from_secs(20),
        TestBroker::try_start_on(pg.clone(), &[]),
    )
    .await;

    // Assert
    let second = second
        .expect("start does not wait for the table lock")
        .expect("broker starts");
    tx.rollback().await.unwrap();
    assert_eq!(history(&sql).await, history_before);
    second.stop().await;
}

/// A pending migration that needs a table another session holds gives up after the
/// migration `lock_timeout` (the start fails, naming the step, instead of queueing behind
/// the holder with live traffic queued behind it), records nothing, and applies at the
/// next start once the table is free.
#[actix_rt::test]
async fn a_pending_migration_blocked_by_a_held_table_gives_up_then_applies_later() {
    // Arrange: 044 (it indexes dead_letters) is pending again, and dead_letters is held.
    let pg = postgres::fresh_database().await;
    TestBroker::start_on(pg.clone(), &[]).await.stop().await;
    let sql = connect(&pg).await;
    sql.execute(
        "DELETE FROM queen.schema_migrations WHERE version = 44",
        &[],
    )
    .await
    .unwrap();
    let mut holder = connect(&pg).await;
    let tx = holder.transaction().await.unwrap();
    tx.batch_execute("LOCK TABLE queen.dead_letters IN ACCESS EXCLUSIVE MODE")
        .await
        .unwrap();

    // Act
    let started = std::time::Instant::now();
    let blocked = tokio::time::timeout(
        Duration::from_secs(60),
        TestBroker::try_start_on(pg.clone(), &[]),
    )
    .await
    .expect("the start gives up by itself");
    let gave_up_after = started.elapsed();
    tx.rollback().await.unwrap();
    let later = TestBroker::try_start_on(pg.clone(), &[]).await;

    // Assert
    let error = blocked.err().expect("the blocked start fails");
    let chain = format!("{error:?}");
    assert!(
        chain.contains("lock timeout") || chain.contains("55P03"),
        "{chain}"
    );
    assert!(gave_up_after >= Duration::from_secs(9), "{gave_up_after:?}");
    later.expect("the next start applies it").stop().await;
    let recorded: i64 = sql
        .query_one(
            "SELECT count(*) FROM queen.schema_migrations WHERE version = 44",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(recorded, 1);
}

/// Several nodes starting at once on a fresh database: every one starts, and each file is
/// applied and recorded exactly once.
#[actix_rt::test]
async fn nodes_starting_together_apply_each_migration_once() {
    // Arrange
    let pg = postgres::fresh_database().await;

    // Act
    let starts =
        futures_util::future::join_all((0..3).map(|_| TestBroker::try_start_on(pg.clone(), &[])))
            .await;

    // Assert
    let sql = connect(&pg).await;
    let rows: Vec<(i32, i64)> = sql
        .query(
            "SELECT version, count(*) FROM queen.schema_migrations GROUP BY version",
            &[],
        )
        .await
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect();
    assert_eq!(rows.len(), FILES.len());
    assert!(rows.iter().all(|(_, n)| *n == 1), "{rows:?}");
    for start in starts {
        start.expect("every node starts").stop().await;
    }
}

async fn connect(pg: &tokio_postgres::Config) -> tokio_postgres::Client {
    let (client, connection) = pg.connect(tokio_postgres::NoTls).await.unwrap();
    tokio::spawn(connection);
    client
}

async fn counts(sql: &tokio_postgres::Client) -> Vec<(String, i64)> {
    let mut out = Vec::new();
    for table in TABLES {
        let n: i64 = sql
            .query_one(&format!("SELECT count(*) FROM queen.{table}"), &[])
            .await
            .unwrap()
            .get(0);
        out.push(((*table).to_owned(), n));
    }
    out
}

async fn history(sql: &tokio_postgres::Client) -> Vec<(i32, String, String)> {
    sql.query(
        "SELECT version, applied_on, checksum FROM queen.schema_migrations ORDER BY version",
        &[],
    )
    .await
    .unwrap()
    .iter()
    .map(|r| (r.get(0), r.get(1), r.get(2)))
    .collect()
}

/// One segment through the old per-message dedup push (`log_push_v1`); the message ids.
async fn push_one(b: &TestBroker, partition: &str, txn: &str) -> Value {
    let item =
        json!({"queue": "up", "partition": partition, "transactionId": txn, "payload": "again"});
    let (_, body) = b.post("/api/v1/push", &json!({ "items": [item] })).await;
    body[0].clone()
}
