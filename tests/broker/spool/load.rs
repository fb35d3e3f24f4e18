//! A PostgreSQL restart under load with the spool on: four producers push, three consumers
//! pop with leases and ack while the server is down for a few seconds. Pushes met by the
//! outage are answered `buffered`, none fails; every message answered as stored (queued,
//! duplicate or buffered) is delivered, and a message comes twice only after a failed ack.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use reqwest::StatusCode;
use serde_json::json;

use super::{spool_metric, wait_replayed};
use crate::support::fixtures::configure;
use crate::support::load::Load;
use crate::support::private_postgres::PrivatePostgres;
use crate::support::TestBroker;

const QUEUE: &str = "spool-load";
/// How long the server stays down.
const DOWN: Duration = Duration::from_secs(3);
/// Short, so a message whose ack failed comes back within the test.
const LEASE_SECS: u64 = 4;

#[actix_rt::test]
async fn a_postgres_restart_under_load_with_the_spool_loses_no_push_and_fails_none() {
    if crate::support::private_postgres::left_out_on_citus() {
        return;
    }
    // Arrange
    let mut server = tokio::task::spawn_blocking(PrivatePostgres::start)
        .await
        .unwrap();
    let b =
        Arc::new(TestBroker::start_on(server.config(), &[("QUEEN_POOL_TIMEOUT_MS", "1000")]).await);
    configure(&b, QUEUE, json!({ "leaseTime": LEASE_SECS })).await;
    let load = Load::new(vec![b.base.clone()], QUEUE, 8, 10);
    let running = load.start(4, 3);
    tokio::time::sleep(Duration::from_secs(1)).await;

    // Act: the restart, then two seconds of load on a server that is back.
    let server_back = tokio::task::spawn_blocking(move || {
        server.restart(DOWN);
        server
    })
    .await
    .unwrap();
    tokio::time::sleep(Duration::from_secs(2)).await;
    // Also asserts: nothing stored lost, duplicates only where an ack failed.
    let stored = running.finish().await;
    wait_replayed(&b.http, &b.base, Duration::from_secs(30)).await;

    // Assert
    let buffered = load.buffered.load(Ordering::Relaxed);
    eprintln!(
        "stored {} messages, {buffered} of them buffered; replayed {} (duplicates {}); failures: {:?}",
        stored.len(),
        spool_metric(&b.http, &b.base, "replayedMessages").await,
        spool_metric(&b.http, &b.base, "replayedDuplicates").await,
        load.failures.summary()
    );
    assert!(buffered > 0, "no push met the outage");
    load.failures.with(|failures| {
        let pushes: Vec<_> = failures
            .iter()
            .filter(|f| f.what == "push")
            .map(|f| format!("{} {}", f.status, f.body))
            .collect();
        assert!(
            pushes.is_empty(),
            "pushes failed with the spool on: {pushes:?}"
        );
        for f in failures {
            assert_eq!(
                f.status,
                StatusCode::SERVICE_UNAVAILABLE,
                "a {}: {}",
                f.what,
                f.body
            );
        }
    });
    drop(server_back);
}
