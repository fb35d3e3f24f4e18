//! A PostgreSQL restart under load with the push spool off (`FILE_BUFFER_MAX_BYTES=0`; the
//! same load with the spool on is `spool::load`), on a private server this test stops and starts: four
//! producers push, three consumers pop with leases and ack, and long-polls are parked, while
//! the server is down for a few seconds. Nothing answered as stored is lost; a message comes
//! twice only when an ack of it failed (its lease expired); every failure is a 503 JSON error
//! that names the connection (never a 500); and requests sent once the server is back, on
//! pooled connections that died while idle, succeed.

use std::sync::Arc;
use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::json;

use crate::support::fixtures::configure;
use crate::support::load::{send, Failures, Load};
use crate::support::private_postgres::PrivatePostgres;
use crate::support::TestBroker;

const QUEUE: &str = "restart";
const PARTITIONS: u64 = 8;
const PRODUCERS: u64 = 4;
const CONSUMERS: usize = 3;
const PUSH_BATCH: u64 = 10;
/// How long the server stays down.
const DOWN: Duration = Duration::from_secs(3);
/// Short, so a message whose ack failed comes back within the test.
const LEASE_SECS: u64 = 4;

/// Long-polls on an empty queue, parked while the server goes down: each must answer
/// 204 or a 503 within its timeout, never a 500 or a hang.
async fn park(b: Arc<TestBroker>, failures: Arc<Failures>) {
    let path = "/api/v1/pop/queue/parked?wait=true&timeout=6000";
    let started = Instant::now();
    let answered = send(&failures, "parked pop", b.http.get(b.url(path))).await;
    if let Some((status, body)) = answered {
        assert_eq!(status, StatusCode::NO_CONTENT, "{body}");
    }
    assert!(
        started.elapsed() < Duration::from_secs(12),
        "a parked pop answered after {:?}",
        started.elapsed()
    );
}

#[actix_rt::test]
async fn a_postgres_restart_under_load_loses_nothing_and_answers_503() {
    if crate::support::private_postgres::left_out_on_citus() {
        return;
    }
    // Arrange: a broker whose pool gives up within a second, so requests meet the outage,
    // and without a spool, so pushes meet it too.
    let mut server = tokio::task::spawn_blocking(PrivatePostgres::start)
        .await
        .unwrap();
    let vars = [
        ("QUEEN_POOL_TIMEOUT_MS", "1000"),
        ("FILE_BUFFER_MAX_BYTES", "0"),
    ];
    let b = Arc::new(TestBroker::start_on(server.config(), &vars).await);
    configure(&b, QUEUE, json!({ "leaseTime": LEASE_SECS })).await;
    let load = Load::new(vec![b.base.clone()], QUEUE, PARTITIONS, PUSH_BATCH);
    let running = load.start(PRODUCERS, CONSUMERS);
    tokio::time::sleep(Duration::from_secs(1)).await;
    let parked: Vec<_> = (0..4)
        .map(|_| tokio::spawn(park(b.clone(), load.failures.clone())))
        .collect();
    tokio::time::sleep(Duration::from_millis(300)).await;

    // Act: the restart, then two seconds of load on a server that is back.
    let delivered_before = running.seen().distinct();
    let server = tokio::task::spawn_blocking(move || {
        server.restart(DOWN);
        server
    })
    .await
    .unwrap();
    let back_at = Instant::now();
    tokio::time::sleep(Duration::from_secs(2)).await;
    for pop in parked {
        pop.await.expect("parked pop");
    }
    // Also asserts: nothing stored lost, duplicates only where an ack failed.
    let stored = running.finish().await;

    // Assert: the outage was met, and met with 503s naming the connection.
    eprintln!(
        "stored {} messages ({delivered_before} delivered before the restart); failures: {:?}",
        stored.len(),
        load.failures.summary()
    );
    load.failures.with(|failures| {
        assert!(!failures.is_empty(), "no request met the outage");
        for f in failures {
            assert_eq!(
                f.status,
                StatusCode::SERVICE_UNAVAILABLE,
                "a {} during the outage answered {}: {}",
                f.what,
                f.status,
                f.body
            );
            let text = f.body["error"].as_str().unwrap_or_default();
            assert!(
                text.contains("connection"),
                "a {} answered {}",
                f.what,
                f.body
            );
        }
        let late: Vec<_> = failures
            .iter()
            .filter(|f| f.sent > back_at)
            .map(|f| format!("{}: {} {}", f.what, f.status, f.body))
            .collect();
        assert!(
            late.is_empty(),
            "requests sent once the server was back failed: {late:?}"
        );
    });
    drop(server);
}
