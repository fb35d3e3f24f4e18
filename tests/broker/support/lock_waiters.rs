//! Holding a partition's lock, and waiting until a statement of the broker's waits on a
//! PostgreSQL lock: how a test blocks a push and knows it has reached the lock it holds.

use std::time::Duration;

use super::{citus, eventually, TestBroker};

/// Whether some backend of the broker's database waits on a lock within `within`. On the
/// Citus layout a delegated statement waits on the partition's worker (the coordinator's
/// backend waits for the worker's answer, not on a lock), so every node is looked at.
pub async fn lock_waiter_within(b: &TestBroker, within: Duration) -> bool {
    let nodes = if citus::layout() {
        citus::every_node(&b.pg)
    } else {
        vec![b.pg.clone()]
    };
    let mut watchers = Vec::new();
    for node in &nodes {
        let (client, connection) = node.connect(tokio_postgres::NoTls).await.unwrap();
        tokio::spawn(connection);
        watchers.push(client);
    }
    eventually(within, || async {
        let mut n = 0;
        for watcher in &watchers {
            let here: i64 = watcher
                .query_one(
                    "SELECT count(*) FROM pg_stat_activity \
                     WHERE datname = current_database() AND wait_event_type = 'Lock'",
                    &[],
                )
                .await
                .unwrap()
                .get(0);
            n += here;
        }
        (n >= 1).then_some(())
    })
    .await
    .is_some()
}

/// Holds the row lock of partition `partition` of queue `queue` in a transaction of `sql`
/// (a push to it then waits in PostgreSQL until the transaction ends).
pub async fn lock_partition<'a>(
    sql: &'a mut tokio_postgres::Client,
    queue: &str,
    partition: &str,
) -> tokio_postgres::Transaction<'a> {
    let tx = sql.transaction().await.unwrap();
    // The id first, then the lock by id: on the Citus layout a `FOR UPDATE` must name the
    // distribution column (`log_partitions.id`) with an equality.
    let id: i64 = tx
        .query_one(
            "SELECT p.id FROM queen.log_partitions p JOIN queen.queues q ON q.id = p.queue_id
              WHERE q.name = $1 AND p.name = $2",
            &[&queue, &partition],
        )
        .await
        .unwrap()
        .get(0);
    let locked = tx
        .execute(
            "SELECT 1 FROM queen.log_partitions p WHERE p.id = $1 FOR UPDATE",
            &[&id],
        )
        .await
        .unwrap();
    assert_eq!(locked, 1, "partition {queue}/{partition} exists");
    tx
}
