//! The order of the reference-table locks on the Citus layout. There every write of a
//! reference table takes Citus's lock on its shard to the end of the transaction, and a
//! write of a table that refers to `queen.queues` by foreign key (the subscriptions
//! `queen.consumer_groups_metadata`, the partition directory) takes that table's lock
//! and then the queues' (docs/scale-out.md, "Part nine"). A transaction that creates a
//! queue and then registers a group on it must take them in the same order, or it
//! deadlocks with a group registering on a queue that exists. On plain PostgreSQL the two
//! transactions below do not touch the same rows and never wait; the test passes there too.

use std::time::Duration;

use crate::support::TestBroker;

/// Registers `group` on the queue `qid` as the broker does at a group's first contact.
const REGISTER: &str = "SELECT queen.log_register_group_at_v1($1, $2, 'all', NULL, false)";

/// One transaction creates a queue (`queen.queue_ensure_v1`) and, after a second
/// transaction has started registering a group on another queue, registers a group on
/// the new one: both commit, neither answers a deadlock (SQLSTATE 40P01).
#[actix_rt::test]
async fn creating_a_queue_then_registering_a_group_races_a_registration_without_deadlock() {
    // Arrange: a queue that exists, for the second transaction.
    let b = TestBroker::start().await;
    let setup = b.sql().await;
    let existing: i64 = setup
        .query_one("SELECT queen.queue_ensure_v1('', 'rlo-existing')", &[])
        .await
        .unwrap()
        .get(0);
    let creator = b.sql().await;
    let registrar = b.sql().await;

    // Act: the creator makes the queue; the registrar starts its registration meanwhile
    // (on the layout it waits here for the creator's locks, or, before the fix, took the
    // subscriptions' lock and waited for the queues'); then the creator registers.
    creator.batch_execute("BEGIN").await.unwrap();
    let fresh: i64 = creator
        .query_one("SELECT queen.queue_ensure_v1('', 'rlo-fresh')", &[])
        .await
        .unwrap()
        .get(0);
    let second = tokio::spawn(async move {
        registrar.batch_execute("BEGIN").await?;
        registrar
            .query_one(REGISTER, &[&existing, &"rlo-second"])
            .await?;
        registrar.batch_execute("COMMIT").await?;
        Ok::<_, tokio_postgres::Error>(())
    });
    tokio::time::sleep(Duration::from_millis(500)).await;
    let first = async {
        creator.query_one(REGISTER, &[&fresh, &"rlo-first"]).await?;
        creator.batch_execute("COMMIT").await
    };
    let first = tokio::time::timeout(Duration::from_secs(30), first)
        .await
        .expect("the creator's registration finished within 30 s");
    let second = tokio::time::timeout(Duration::from_secs(30), second)
        .await
        .expect("the second registration finished within 30 s")
        .expect("the second registration's task");

    // Assert
    assert!(first.is_ok(), "the creator's transaction: {first:?}");
    assert!(second.is_ok(), "the second registration: {second:?}");
    let registered: i64 = setup
        .query_one(
            "SELECT count(*) FROM queen.consumer_groups_metadata
             WHERE consumer_group IN ('rlo-first', 'rlo-second')",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(registered, 2);
}
