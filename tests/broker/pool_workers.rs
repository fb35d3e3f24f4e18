//! Each HTTP worker's own connections (`QUEEN_DB_WORKER_CONNECTIONS`): requests take them
//! while one is idle, fall back to the shared pool when they are busy, and the broker never
//! holds more than `DB_POOL_SIZE` connections in all.

use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::support::drain::{assert_exactly_once_in_order, drain, fill};
use crate::support::fixtures::{count, metrics};
use crate::support::TestBroker;

/// The broker's connections to its database right now, as PostgreSQL counts them.
async fn backends(b: &TestBroker, sql: &tokio_postgres::Client) -> i64 {
    let db = b.pg.get_dbname().expect("the test database has a name");
    sql.query_one(
        "SELECT count(*) FROM pg_stat_activity \
         WHERE datname = $1 AND application_name = 'queen'",
        &[&db],
    )
    .await
    .expect("pg_stat_activity")
    .get(0)
}

/// Sixteen consumers on a pool of 6 (one connection per worker, four shared) drain 4,000
/// messages exactly once: some checkouts come from the workers' own connections, some
/// from the shared pool, and the broker never holds more than 6 connections.
#[actix_rt::test]
async fn sixteen_consumers_use_the_workers_own_connections_and_the_shared_ones_within_the_pool_size(
) {
    // Arrange
    let broker = Arc::new(
        TestBroker::start_with(&[("DB_POOL_SIZE", "6"), ("QUEEN_DB_WORKER_CONNECTIONS", "1")])
            .await,
    );
    let (partitions, per_partition) = (16usize, 250usize);
    fill(&broker, "workers", partitions, per_partition).await;
    let before = metrics(&broker).await;
    let sql = broker.sql().await;
    let most = Arc::new(AtomicI64::new(0));
    let done = Arc::new(AtomicBool::new(false));
    let watcher = {
        let (broker, most, done) = (broker.clone(), most.clone(), done.clone());
        tokio::spawn(async move {
            while !done.load(Ordering::Relaxed) {
                most.fetch_max(backends(&broker, &sql).await, Ordering::Relaxed);
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        })
    };

    // Act
    let all = drain(
        broker.clone(),
        "/api/v1/pop/queue/workers?batch=20&wait=true&timeout=500",
        16,
        partitions * per_partition,
        Duration::from_secs(120),
    )
    .await;
    done.store(true, Ordering::Relaxed);
    watcher.await.expect("watcher");

    // Assert
    assert_exactly_once_in_order("workers", &all, partitions as u64, per_partition as u64);
    let after = metrics(&broker).await;
    let own =
        count(&after, "/pool/workerCheckoutsTotal") - count(&before, "/pool/workerCheckoutsTotal");
    let all_checkouts =
        count(&after, "/pool/checkoutsTotal") - count(&before, "/pool/checkoutsTotal");
    assert!(own > 0, "no checkout used a worker's own connection");
    assert!(
        own < all_checkouts,
        "every one of {all_checkouts} checkouts used a worker's own connection: none fell back"
    );
    let most = most.load(Ordering::Relaxed);
    assert!(
        (1..=6).contains(&most),
        "the broker held {most} connections, the pool size is 6"
    );
    assert!(count(&after, "/pool/size") == 6, "{after}");
}

/// With the setting at 0 every request takes a shared connection.
#[actix_rt::test]
async fn with_no_worker_connections_every_checkout_is_shared() {
    // Arrange
    let broker = TestBroker::start_with(&[("QUEEN_DB_WORKER_CONNECTIONS", "0")]).await;
    broker.push("shared", "P", &[serde_json::json!(1)]).await;

    // Act
    let popped = broker
        .pop_messages("/api/v1/pop/queue/shared?batch=5")
        .await;
    let answers = broker.ack_all(&popped, "completed", None).await;

    // Assert
    assert_eq!(popped.len(), 1);
    assert!(answers.iter().all(|a| a["success"] == true), "{answers:?}");
    let m = metrics(&broker).await;
    assert!(count(&m, "/pool/checkoutsTotal") > 0, "{m}");
    assert_eq!(count(&m, "/pool/workerCheckoutsTotal"), 0, "{m}");
}
