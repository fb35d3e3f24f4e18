//! How durably acks and leased claims commit: on plain PostgreSQL a plain ack does not
//! wait for the WAL flush unless `QUEEN_ACK_SYNC_COMMIT` is on, and neither does a leased
//! claim; on the Citus layout both wait unless `QUEEN_ACK_SYNC_COMMIT` is set off (a shard
//! move loses an asynchronous commit of its last moments); an ack inside a transaction
//! bundle always waits. Observed from inside PostgreSQL: a test trigger records the
//! `synchronous_commit` in force when an ack's or a claim's cursor update commits (a
//! deferred constraint trigger), on a database whose default is `on`.
//!
//! On the Citus layout the cursor update runs on the worker holding the partition's shard,
//! in the worker's transaction (`queen.log_ack_v3`, delegated), and that transaction's
//! commit is the one whose flush matters; the coordinator's session settings do not reach
//! it. So there the test observes the worker: the default `on` is set on every node (the
//! test cluster's nodes run with `off`), the trigger goes to the shards
//! (`citus.enable_unsafe_triggers`, as `kv::install_kv_fault` does) and records into a
//! table of the node it fires on, and the records are read from every node. An `off`
//! there is the broker's relaxed choice reaching the worker's own commit.

use serde_json::{json, Value};

use crate::support::fixtures::numbers;
use crate::support::{citus, postgres, TestBroker};

/// The recording table and its trigger function.
const RECORDER: [&str; 2] = [
    "CREATE TABLE public.ack_commits (what text NOT NULL, setting text NOT NULL)",
    "CREATE FUNCTION public.record_ack_commit() RETURNS trigger LANGUAGE plpgsql AS $$
     BEGIN
         IF NEW.worker_id IS NULL AND OLD.worker_id IS NOT NULL THEN
             INSERT INTO public.ack_commits
             VALUES ('ack', current_setting('synchronous_commit'));
         ELSIF NEW.worker_id IS NOT NULL AND OLD.worker_id IS DISTINCT FROM NEW.worker_id THEN
             INSERT INTO public.ack_commits
             VALUES ('claim', current_setting('synchronous_commit'));
         END IF;
         RETURN NULL;
     END $$",
];

/// A fresh database whose sessions default to synchronous commits, with a trigger function
/// that records the setting in force when a transaction that released or took a lease
/// commits (a deferred constraint trigger: a claim sets its setting after its UPDATE).
/// On the Citus layout the setting, the table and the function are made on every node,
/// each node's own (DDL propagation off).
async fn recorded_database() -> tokio_postgres::Config {
    let pg = postgres::fresh_installed_database().await;
    if citus::layout() {
        citus::set_on_every_node(&pg, "synchronous_commit = on").await;
        for node in citus::every_node(&pg) {
            let client = connect(&node).await;
            client
                .batch_execute("SET citus.enable_ddl_propagation TO off")
                .await
                .unwrap();
            for statement in RECORDER {
                client.batch_execute(statement).await.unwrap();
            }
        }
        return pg;
    }
    let client = connect(&pg).await;
    let db = pg.get_dbname().unwrap().to_owned();
    client
        .batch_execute(&format!("ALTER DATABASE {db} SET synchronous_commit = on"))
        .await
        .unwrap();
    for statement in RECORDER {
        client.batch_execute(statement).await.unwrap();
    }
    pg
}

/// A session on `config`'s database.
async fn connect(config: &tokio_postgres::Config) -> tokio_postgres::Client {
    let (client, connection) = config.connect(tokio_postgres::NoTls).await.unwrap();
    tokio::spawn(connection);
    client
}

/// Where the records are: every node of the Citus layout, else the one database.
fn recording_nodes(b: &TestBroker) -> Vec<tokio_postgres::Config> {
    if citus::layout() {
        citus::every_node(&b.pg)
    } else {
        vec![b.pg.clone()]
    }
}

/// Installs the trigger once the broker has created its tables, after clearing the
/// records. On the Citus layout `log_consumers` is distributed: the trigger needs
/// `citus.enable_unsafe_triggers`, and goes alone in its query (Citus sends a trigger's
/// DDL to the workers with the query's text).
async fn record(b: &TestBroker) {
    for node in recording_nodes(b) {
        connect(&node)
            .await
            .batch_execute("DELETE FROM public.ack_commits")
            .await
            .unwrap();
    }
    let sql = b.sql().await;
    if citus::layout() {
        sql.batch_execute("SET citus.enable_unsafe_triggers = on")
            .await
            .expect("allow a trigger on a distributed table");
    }
    sql.batch_execute(
        "CREATE CONSTRAINT TRIGGER record_ack_commit AFTER UPDATE ON queen.log_consumers
         DEFERRABLE INITIALLY DEFERRED
         FOR EACH ROW EXECUTE FUNCTION public.record_ack_commit()",
    )
    .await
    .unwrap();
}

/// The settings recorded for acks, node after node.
async fn recorded(b: &TestBroker) -> Vec<String> {
    recorded_for(b, "ack").await
}

/// The settings recorded for `what` (`ack` or `claim`), node after node.
async fn recorded_for(b: &TestBroker, what: &str) -> Vec<String> {
    let mut settings = Vec::new();
    for node in recording_nodes(b) {
        let rows = connect(&node)
            .await
            .query(
                "SELECT setting FROM public.ack_commits WHERE what = $1",
                &[&what],
            )
            .await
            .unwrap();
        settings.extend(rows.iter().map(|r| r.get::<_, String>(0)));
    }
    settings
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

/// A broker with `env` on a recorded database whose `queue` has had its first contact (a
/// group's first pop and ack, which set up more than an ack), recording from now on.
async fn warmed_broker(queue: &str, env: &[(&str, &str)]) -> TestBroker {
    let b = TestBroker::start_on(recorded_database().await, env).await;
    b.push(queue, "P", &[json!("first contact")]).await;
    let warm = b
        .pop_messages(&format!("/api/v1/pop/queue/{queue}?batch=1"))
        .await;
    b.ack_all(&warm, "completed", None).await;
    record(&b).await;
    b
}

/// What an ack or a leased claim commits with by default: without waiting for the flush
/// on plain PostgreSQL, waiting on the Citus layout.
fn default_setting() -> &'static str {
    if citus::layout() {
        "on"
    } else {
        "off"
    }
}

/// By default acks do not wait for the flush on plain PostgreSQL, through either ack path;
/// on the Citus layout they do.
#[actix_rt::test]
async fn by_default_an_ack_waits_for_the_wal_flush_only_on_the_citus_layout() {
    // Arrange
    let b = warmed_broker("ad-default", &[]).await;

    // Act
    ack_some(&b, "ad-default").await;

    // Assert
    assert_eq!(recorded(&b).await, vec![default_setting(); 2]);
}

/// `QUEEN_ACK_SYNC_COMMIT` set off is the operator's choice, on the Citus layout too.
#[actix_rt::test]
async fn with_ack_sync_commit_off_no_ack_waits_for_the_wal_flush() {
    // Arrange
    let b = warmed_broker("ad-off", &[("QUEEN_ACK_SYNC_COMMIT", "false")]).await;

    // Act
    ack_some(&b, "ad-off").await;

    // Assert
    assert_eq!(recorded(&b).await, vec!["off", "off"]);
}

/// A leased claim does not wait for the flush on plain PostgreSQL, and waits on the Citus
/// layout, where a shard move would lose it and hand its batch out again while its first
/// consumer still holds it.
#[actix_rt::test]
async fn a_leased_claim_waits_for_the_wal_flush_only_on_the_citus_layout() {
    // Arrange
    let b = warmed_broker("ad-claim", &[]).await;
    b.push("ad-claim", "P", &numbers(0..3)).await;

    // Act
    let batch = b.pop_messages("/api/v1/pop/queue/ad-claim?batch=3").await;

    // Assert
    assert_eq!(batch.len(), 3);
    assert_eq!(recorded_for(&b, "claim").await, vec![default_setting()]);
}

/// With `QUEEN_ACK_SYNC_COMMIT` on, every ack waits for the flush.
#[actix_rt::test]
async fn with_ack_sync_commit_on_every_ack_waits_for_the_wal_flush() {
    // Arrange
    let b = warmed_broker("ad-sync", &[("QUEEN_ACK_SYNC_COMMIT", "true")]).await;

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
