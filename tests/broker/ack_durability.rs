//! How durably acks commit: a plain ack does not wait for the WAL flush unless
//! `QUEEN_ACK_SYNC_COMMIT` is on; an ack inside a transaction bundle always waits. Observed
//! from inside PostgreSQL: a test trigger records the `synchronous_commit` in force when an
//! ack's cursor update finishes, on a database whose default is `on`.

use serde_json::{json, Value};

use crate::support::fixtures::numbers;
use crate::support::{postgres, TestBroker};

/// A fresh database whose sessions default to synchronous commits, with a trigger that
/// records the setting in force at the end of every statement that releases a lease.
async fn recorded_database() -> tokio_postgres::Config {
    let pg = postgres::fresh_database().await;
    let (client, connection) = pg.connect(tokio_postgres::NoTls).await.unwrap();
    tokio::spawn(connection);
    let db = pg.get_dbname().unwrap().to_owned();
    client
        .batch_execute(&format!(
            "ALTER DATABASE {db} SET synchronous_commit = on;
             CREATE TABLE public.ack_commits (setting text NOT NULL);
             CREATE FUNCTION public.record_ack_commit() RETURNS trigger LANGUAGE plpgsql AS $$
             BEGIN
                 IF NEW.worker_id IS NULL AND OLD.worker_id IS NOT NULL THEN
                     INSERT INTO public.ack_commits VALUES (current_setting('synchronous_commit'));
                 END IF;
                 RETURN NULL;
             END $$;"
        ))
        .await
        .unwrap();
    pg
}

/// Installs the trigger once the broker has created its tables.
async fn record(b: &TestBroker) {
    b.sql()
        .await
        .batch_execute(
            "DELETE FROM public.ack_commits;
             CREATE OR REPLACE TRIGGER record_ack_commit AFTER UPDATE ON queen.log_consumers
             FOR EACH ROW EXECUTE FUNCTION public.record_ack_commit();",
        )
        .await
        .unwrap();
}

async fn recorded(b: &TestBroker) -> Vec<String> {
    b.sql()
        .await
        .query("SELECT setting FROM public.ack_commits", &[])
        .await
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect()
}

/// Pushes, pops and acks one batch, completely (the whole-lease ack) and, for a second
/// batch, partly then the rest (the itemized ack, then the whole-lease one).
async fn ack_some(b: &TestBroker, queue: &str) {
    b.push(queue, "P", &numbers(0..3)).await;
    let batch = b
        .pop_messages(&format!("/api/v1/pop/queue/{queue}?batch=3"))
        .await;
    assert_eq!(batch.len(), 3);
    assert!(b
        .ack_all(&batch, "completed", None)
        .await
        .iter()
        .all(|a| a["success"] == true));
    b.push(queue, "P", &numbers(3..6)).await;
    let batch = b
        .pop_messages(&format!("/api/v1/pop/queue/{queue}?batch=3"))
        .await;
    assert_eq!(batch.len(), 3);
    let first = b.ack_all(&batch[..1], "failed", None).await;
    assert_eq!(first[0]["success"], true, "{first:?}");
}

/// By default acks do not wait for the flush, through either ack path.
#[actix_rt::test]
async fn by_default_an_ack_does_not_wait_for_the_wal_flush() {
    // Arrange
    let b = TestBroker::start_on(recorded_database().await, &[]).await;
    b.push("ad-default", "P", &[json!("first contact")]).await;
    let warm = b.pop_messages("/api/v1/pop/queue/ad-default?batch=1").await;
    b.ack_all(&warm, "completed", None).await;
    record(&b).await;

    // Act
    ack_some(&b, "ad-default").await;

    // Assert
    assert_eq!(recorded(&b).await, vec!["off", "off"]);
}

/// With `QUEEN_ACK_SYNC_COMMIT` on, every ack waits for the flush.
#[actix_rt::test]
async fn with_ack_sync_commit_on_every_ack_waits_for_the_wal_flush() {
    // Arrange
    let b = TestBroker::start_on(
        recorded_database().await,
        &[("QUEEN_ACK_SYNC_COMMIT", "true")],
    )
    .await;
    b.push("ad-sync", "P", &[json!("first contact")]).await;
    let warm = b.pop_messages("/api/v1/pop/queue/ad-sync?batch=1").await;
    b.ack_all(&warm, "completed", None).await;
    record(&b).await;

    // Act
    ack_some(&b, "ad-sync").await;

    // Assert
    assert_eq!(recorded(&b).await, vec!["on", "on"]);
}

/// An ack inside a transaction bundle waits for the flush, with the bundle's push.
#[actix_rt::test]
async fn an_ack_in_a_transaction_bundle_waits_for_the_wal_flush() {
    // Arrange
    let b = TestBroker::start_on(recorded_database().await, &[]).await;
    b.push("ad-bundle", "P", &numbers(0..2)).await;
    let batch = b.pop_messages("/api/v1/pop/queue/ad-bundle?batch=2").await;
    assert_eq!(batch.len(), 2);
    record(&b).await;
    let ops: Vec<Value> = batch
        .iter()
        .map(|m| {
            json!({"type": "ack", "transactionId": m["transactionId"],
                   "partitionId": m["partitionId"], "status": "completed",
                   "leaseId": m["leaseId"]})
        })
        .chain([json!({"type": "push", "items": [
            {"queue": "ad-bundle-out", "partition": "P", "payload": "next"}]})])
        .collect();

    // Act
    let (status, answer) = b
        .post("/api/v1/transaction", &json!({ "operations": ops }))
        .await;

    // Assert
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["success"], true, "{answer}");
    assert_eq!(recorded(&b).await, vec!["on"]);
}
