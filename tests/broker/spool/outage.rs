//! PostgreSQL stopped under a broker: pushes are answered `buffered`; once it is back, the
//! replay stores every buffered message exactly once, in order per partition.

use std::time::Duration;

use serde_json::json;

use super::{assert_all, items, push, read_partition, spool_metric, wait_replayed};
use crate::support::fixtures::configure;
use crate::support::private_postgres::PrivatePostgres;
use crate::support::TestBroker;

const QUEUE: &str = "spool-outage";
const PARTITIONS: u64 = 3;
const PUSHES: u64 = 20;
const BATCH: u64 = 5;

#[actix_rt::test]
async fn pushes_while_postgres_is_stopped_are_buffered_then_stored_once_in_order() {
    if crate::support::private_postgres::left_out_on_citus() {
        return;
    }
    // Arrange: one message stored before the outage in each partition.
    let server = tokio::task::spawn_blocking(PrivatePostgres::start)
        .await
        .unwrap();
    let b = TestBroker::start_on(server.config(), &[("QUEEN_POOL_TIMEOUT_MS", "3000")]).await;
    configure(&b, QUEUE, json!({})).await;
    for p in 0..PARTITIONS {
        let (status, body) = push(&b.http, &b.base, &items(QUEUE, &format!("p{p}"), 0..1)).await;
        assert!(status.is_success(), "{body}");
        assert_all("queued", &body);
    }
    let mut server = tokio::task::spawn_blocking(move || {
        let mut server = server;
        server.stop();
        server
    })
    .await
    .unwrap();

    // Act: pushes while the server is down, then the server back.
    for k in 0..PUSHES {
        for p in 0..PARTITIONS {
            let first = 1 + k * BATCH;
            let batch = items(QUEUE, &format!("p{p}"), first..first + BATCH);
            let (status, body) = push(&b.http, &b.base, &batch).await;
            assert_eq!(status.as_u16(), 201, "{body}");
            assert_all("buffered", &body);
        }
    }
    // A partition never pushed before: the outage is known, so no pool timeout is waited.
    let started = std::time::Instant::now();
    let (status, body) = push(&b.http, &b.base, &items(QUEUE, "fresh", 0..1)).await;
    let fresh_took = started.elapsed();
    assert_eq!(status.as_u16(), 201, "{body}");
    assert_all("buffered", &body);
    // A transaction bundle needs the database: its push is not spooled, and p0 has
    // spooled pushes it must not overtake (src/log/spool/order.rs), so it is refused at once.
    let bundle =
        json!({"operations": [{"type": "push", "items": items(QUEUE, "p0", 9_000..9_001)}]});
    let (bundle_status, bundle_answer) = b.post("/api/v1/transaction", &bundle).await;
    let buffered = spool_metric(&b.http, &b.base, "pendingRecords").await;
    let server = tokio::task::spawn_blocking(move || {
        server.start_again();
        server
    })
    .await
    .unwrap();
    wait_replayed(&b.http, &b.base, Duration::from_secs(60)).await;

    // Assert: each partition holds 0..=PUSHES*BATCH once, in order; the bundle was a 503.
    assert_eq!(bundle_status.as_u16(), 503, "{bundle_answer}");
    let text = bundle_answer["error"].as_str().unwrap_or_default();
    assert!(text.contains("spooled pushes"), "{bundle_answer}");
    assert_eq!(buffered, (PUSHES * PARTITIONS + 1) as i64);
    assert!(
        fresh_took < Duration::from_millis(1500),
        "a push during a known outage waited {fresh_took:?} (pool timeout 3 s)"
    );
    assert_eq!(read_partition(&b.http, &b.base, QUEUE, "fresh").await, [0]);
    for p in 0..PARTITIONS {
        let got = read_partition(&b.http, &b.base, QUEUE, &format!("p{p}")).await;
        let want: Vec<u64> = (0..1 + PUSHES * BATCH).collect();
        assert_eq!(got, want, "partition p{p}");
    }
    let stored = spool_metric(&b.http, &b.base, "replayedMessages").await;
    assert_eq!(stored, (PUSHES * BATCH * PARTITIONS + 1) as i64);
    b.stop().await;
    drop(server);
}
