//! A node killed with SIGKILL while its spool holds pushes (PostgreSQL down), started again
//! once PostgreSQL is back: every push answered `buffered` is stored exactly once, in order
//! per partition; a push in flight at the kill is stored whole or not at all.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use reqwest::StatusCode;
use serde_json::json;

use super::cluster::{Options, TestCluster};
use crate::spool::{items, read_partition, wait_replayed};
use crate::support::private_postgres::PrivatePostgres;
use crate::support::read;

const QUEUE: &str = "spool-kill";
const PRODUCERS: u64 = 4;
const BATCH: u64 = 5;

/// Pushes batches to its own partition until a push gets no answer (the node died) or it
/// is told to stop; answers the numbers answered `buffered`, and the batch in flight.
async fn produce(url: String, p: u64, stop: Arc<AtomicBool>) -> (Vec<u64>, Option<Vec<u64>>) {
    let http = super::node::client();
    let mut acked = Vec::new();
    let mut n = 0;
    while !stop.load(Ordering::Relaxed) {
        let body = json!({ "items": items(QUEUE, &format!("p{p}"), n..n + BATCH) });
        let sent = http
            .post(format!("{url}/api/v1/push"))
            .json(&body)
            .send()
            .await;
        let Ok(response) = sent else {
            return (acked, Some((n..n + BATCH).collect()));
        };
        let (status, answer) = read(response).await;
        if status != StatusCode::CREATED {
            // The answer was cut by the kill.
            return (acked, Some((n..n + BATCH).collect()));
        }
        for a in answer.as_array().expect("answers") {
            assert_eq!(a["status"], "buffered", "{answer}");
        }
        acked.extend(n..n + BATCH);
        n += BATCH;
    }
    (acked, None)
}

#[actix_rt::test]
async fn a_node_killed_with_a_full_spool_stores_every_buffered_push_once_after_its_restart() {
    // Arrange: one node on a private server, which then stops.
    let server = tokio::task::spawn_blocking(PrivatePostgres::start)
        .await
        .unwrap();
    let options = Options::cut().with("QUEEN_POOL_TIMEOUT_MS", "1000");
    let mut cluster = TestCluster::start_on(server.config(), 1, options).await;
    cluster.node(0).configure(QUEUE, json!({})).await;
    let server = tokio::task::spawn_blocking(move || {
        let mut server = server;
        server.stop();
        server
    })
    .await
    .unwrap();
    let url = cluster.node(0).url();
    let stop = Arc::new(AtomicBool::new(false));
    let producers: Vec<_> = (0..PRODUCERS)
        .map(|p| tokio::spawn(produce(url.clone(), p, stop.clone())))
        .collect();

    // Act: SIGKILL with pushes in flight, the server back, the node started again.
    tokio::time::sleep(Duration::from_secs(3)).await;
    cluster.kill_hard(0);
    stop.store(true, Ordering::Relaxed);
    let mut outcomes = Vec::new();
    for task in producers {
        outcomes.push(task.await.unwrap());
    }
    let server = tokio::task::spawn_blocking(move || {
        let mut server = server;
        server.start_again();
        server
    })
    .await
    .unwrap();
    cluster.restart(0).await;
    let node = cluster.node(0);
    wait_replayed(&node.http, &node.url(), Duration::from_secs(60)).await;

    // Assert: each partition is its acknowledged numbers, then maybe the batch in flight.
    let mut total = 0;
    for (p, (acked, in_flight)) in outcomes.iter().enumerate() {
        assert!(
            !acked.is_empty(),
            "producer {p} had nothing buffered before the kill"
        );
        total += acked.len();
        let got = read_partition(&node.http, &node.url(), QUEUE, &format!("p{p}")).await;
        let mut with_flight = acked.clone();
        with_flight.extend(in_flight.iter().flatten());
        assert!(
            got == *acked || got == with_flight,
            "partition p{p}: acknowledged {} numbers up to {:?}, stored {:?}",
            acked.len(),
            acked.last(),
            got
        );
    }
    eprintln!("{total} buffered messages survived the kill");
    drop(server);
}

/// Stored messages of the whole database, from the segments' counts.
async fn stored(cluster: &TestCluster) -> i64 {
    let sql = cluster.sql().await;
    let row = sql
        .query_one(
            "SELECT coalesce(sum(msg_count), 0)::bigint FROM queen.log_segments",
            &[],
        )
        .await
        .expect("count stored messages");
    row.get(0)
}

#[actix_rt::test]
async fn a_node_killed_in_the_middle_of_its_replay_stores_each_message_once_after_its_restart() {
    // Arrange: push maintenance on, many small records spooled in several partitions.
    const PARTITIONS: u64 = 4;
    const RECORDS: u64 = 100;
    let mut cluster = TestCluster::start(1, Options::cut()).await;
    let node = cluster.node(0);
    let (status, body) = node
        .post("/api/v1/system/maintenance", &json!({"push": true}))
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    for n in 0..RECORDS {
        for p in 0..PARTITIONS {
            let batch = items(QUEUE, &format!("p{p}"), n * BATCH..(n + 1) * BATCH);
            let (status, body) = node.post("/api/v1/push", &json!({ "items": batch })).await;
            assert_eq!(status, StatusCode::CREATED, "{body}");
        }
    }

    // Act: the switch off, and SIGKILL as soon as the replay has stored something.
    let (status, body) = node
        .post("/api/v1/system/maintenance", &json!({"push": false}))
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let replaying = crate::support::eventually(Duration::from_secs(20), || async {
        (crate::spool::spool_metric(&node.http, &node.url(), "replayedRecords").await > 0)
            .then_some(())
    })
    .await;
    cluster.kill_hard(0);
    assert!(replaying.is_some(), "the replay never started");
    let before_restart = stored(&cluster).await;
    cluster.restart(0).await;
    let node = cluster.node(0);
    wait_replayed(&node.http, &node.url(), Duration::from_secs(60)).await;

    // Assert: each partition once, in order; what the first run stored came back as
    // duplicates, not as second copies.
    let total = (PARTITIONS * RECORDS * BATCH) as i64;
    let duplicates =
        crate::spool::spool_metric(&node.http, &node.url(), "replayedDuplicates").await;
    eprintln!("{before_restart} of {total} stored before the kill; {duplicates} duplicates after");
    for p in 0..PARTITIONS {
        let got = read_partition(&node.http, &node.url(), QUEUE, &format!("p{p}")).await;
        let want: Vec<u64> = (0..RECORDS * BATCH).collect();
        assert_eq!(got, want, "partition p{p}");
    }
    assert_eq!(stored(&cluster).await, total);
    if before_restart < total {
        assert!(
            duplicates > 0,
            "the second run replayed nothing the first had stored"
        );
    }
}
