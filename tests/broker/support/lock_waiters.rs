//! Waiting until a statement of the broker's waits on a PostgreSQL lock: how a test knows
//! the push or pop it set up to block has reached the lock it holds.

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
