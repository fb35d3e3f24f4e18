//! Combined pushes meeting an outage: with PostgreSQL stopped, a burst of concurrent
//! pushes (combined into one transaction by the push writers) is spooled at once, not one
//! pool timeout per request, and every push is stored exactly once when the server is back.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::json;

use crate::spool::{push, read_partition, wait_replayed};
use crate::support::private_postgres::PrivatePostgres;
use crate::support::TestBroker;

/// How long a request waits for a pooled connection (`QUEEN_POOL_TIMEOUT_MS`).
const POOL_TIMEOUT: Duration = Duration::from_millis(1000);
/// Concurrent pushes while the server is down.
const PUSHES: u64 = 24;

/// Twenty-four concurrent pushes to one partition while PostgreSQL is stopped are all
/// answered `buffered` within a few pool timeouts (request by request, the last waited
/// about one timeout per push before it), and after the restart each is stored once.
#[actix_rt::test]
async fn combined_pushes_meeting_an_outage_are_answered_at_once_and_stored_once() {
    if crate::support::private_postgres::left_out_on_citus() {
        return;
    }
    // Arrange: a broker with its spool on and a pool that gives up within a second.
    let mut server = tokio::task::spawn_blocking(PrivatePostgres::start)
        .await
        .unwrap();
    let timeout = POOL_TIMEOUT.as_millis().to_string();
    let b = Arc::new(
        TestBroker::start_on(
            server.config(),
            &[("QUEEN_POOL_TIMEOUT_MS", timeout.as_str())],
        )
        .await,
    );
    let queue = "outage-combined";
    b.push(queue, "p", &[json!({"n": 1000})]).await;
    let mut server = tokio::task::spawn_blocking(move || {
        server.stop();
        server
    })
    .await
    .unwrap();

    // Act: the burst, each push timed.
    let started = Instant::now();
    let burst: Vec<_> = (0..PUSHES)
        .map(|n| {
            let b = b.clone();
            tokio::spawn(async move {
                let item = json!({"queue": queue, "partition": "p", "payload": {"n": n}});
                let (status, body) = push(&b.http, &b.base, &[item]).await;
                (n, status, body, started.elapsed())
            })
        })
        .collect();
    let mut answers = Vec::new();
    for push in burst {
        answers.push(push.await.expect("the push task"));
    }
    let server = tokio::task::spawn_blocking(move || {
        server.start_again();
        server
    })
    .await
    .unwrap();
    wait_replayed(&b.http, &b.base, Duration::from_secs(60)).await;

    // Assert
    let slowest = answers.iter().map(|a| a.3).max().expect("answers");
    for (n, status, body, _) in &answers {
        assert_eq!(*status, StatusCode::CREATED, "push {n}: {body}");
        assert_eq!(body[0]["status"], "buffered", "push {n}: {body}");
    }
    assert!(
        slowest < POOL_TIMEOUT * 5,
        "the slowest push of the burst took {slowest:?}"
    );
    let got = read_partition(&b.http, &b.base, queue, "p").await;
    let mut times: BTreeMap<u64, usize> = BTreeMap::new();
    for n in &got {
        *times.entry(*n).or_default() += 1;
    }
    let expected: BTreeMap<u64, usize> = (0..PUSHES).chain([1000]).map(|n| (n, 1)).collect();
    assert_eq!(times, expected, "each push stored once");
    drop(server);
}
