//! The push maintenance switch: `{"push": true}` sends pushes to the spool with the
//! database up; `{"push": false}` replays them, in order, each once; and a push that comes
//! while a partition still has spooled records never overtakes them.

use std::sync::Arc;
use std::time::Duration;

use reqwest::StatusCode;
use serde_json::json;

use super::{assert_all, items, push, read_partition, spool_metric, wait_replayed};
use crate::support::TestBroker;

const PARTITIONS: u64 = 2;
const PUSHES: u64 = 15;
const BATCH: u64 = 10;

async fn switch(b: &TestBroker, body: serde_json::Value) -> serde_json::Value {
    let (status, answer) = b.post("/api/v1/system/maintenance", &body).await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    answer
}

#[actix_rt::test]
async fn push_maintenance_buffers_pushes_and_turning_it_off_stores_them_once_in_order() {
    // Arrange
    let b = TestBroker::start().await;
    let queue = "spool-maintenance";
    let answer = switch(&b, json!({"push": true})).await;
    assert_eq!(answer, json!({"pop": false, "push": true}));
    let (_, read_back) = b.get("/api/v1/system/maintenance").await;
    assert_eq!(read_back, json!({"pop": false, "push": true}));

    // Act: pushes with the database up, a bad push among them, then the switch off.
    for k in 0..PUSHES {
        for p in 0..PARTITIONS {
            let first = k * BATCH;
            let batch = items(queue, &format!("p{p}"), first..first + BATCH);
            let (status, body) = push(&b.http, &b.base, &batch).await;
            assert_eq!(status, StatusCode::CREATED, "{body}");
            assert_all("buffered", &body);
        }
    }
    let (status, body) = b
        .post(
            "/api/v1/push",
            &json!({"items": [{"queue": queue, "partition": 7}]}),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    let (status, body) = b
        .post("/api/v1/system/maintenance", &json!({"push": "yes"}))
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    let pending = spool_metric(&b.http, &b.base, "pendingRecords").await;
    let before = read_partition(&b.http, &b.base, queue, "p0").await;
    switch(&b, json!({"push": false})).await;
    wait_replayed(&b.http, &b.base, Duration::from_secs(30)).await;

    // Assert: nothing reached the database while the switch was on; all of it after.
    assert_eq!(pending, (PUSHES * PARTITIONS) as i64);
    assert!(
        before.is_empty(),
        "stored during push maintenance: {before:?}"
    );
    for p in 0..PARTITIONS {
        let got = read_partition(&b.http, &b.base, queue, &format!("p{p}")).await;
        let want: Vec<u64> = (0..PUSHES * BATCH).collect();
        assert_eq!(got, want, "partition p{p}");
    }
    b.stop().await;
}

#[actix_rt::test]
async fn pushes_after_push_maintenance_ends_never_overtake_the_spooled_ones() {
    // Arrange: many small spooled pushes per partition, so the replay takes a while.
    const PRODUCERS: u64 = 6;
    const SPOOLED: u64 = 60;
    const AFTER: u64 = 30;
    let b = Arc::new(TestBroker::start().await);
    let queue = "spool-overtake";
    switch(&b, json!({"push": true})).await;
    let spool_phase: Vec<_> = (0..PRODUCERS)
        .map(|p| {
            let b = b.clone();
            tokio::spawn(async move {
                for n in 0..SPOOLED {
                    let (status, body) =
                        push(&b.http, &b.base, &items(queue, &format!("p{p}"), n..n + 1)).await;
                    assert_eq!(status, StatusCode::CREATED, "{body}");
                    assert_all("buffered", &body);
                }
            })
        })
        .collect();
    for task in spool_phase {
        task.await.unwrap();
    }

    // Act: the switch off, and at once more pushes to the same partitions.
    switch(&b, json!({"push": false})).await;
    let after: Vec<_> = (0..PRODUCERS)
        .map(|p| {
            let b = b.clone();
            tokio::spawn(async move {
                let mut statuses = Vec::new();
                for n in SPOOLED..SPOOLED + AFTER {
                    let (status, body) =
                        push(&b.http, &b.base, &items(queue, &format!("p{p}"), n..n + 1)).await;
                    assert_eq!(status, StatusCode::CREATED, "{body}");
                    statuses.push(body[0]["status"].as_str().unwrap_or_default().to_owned());
                }
                statuses
            })
        })
        .collect();
    let mut buffered_after = 0;
    for task in after {
        buffered_after += task
            .await
            .unwrap()
            .iter()
            .filter(|s| *s == "buffered")
            .count();
    }
    wait_replayed(&b.http, &b.base, Duration::from_secs(30)).await;

    // Assert: every partition in push order, each message once.
    eprintln!("{buffered_after} pushes after the switch went to the spool behind the replay");
    for p in 0..PRODUCERS {
        let got = read_partition(&b.http, &b.base, queue, &format!("p{p}")).await;
        let want: Vec<u64> = (0..SPOOLED + AFTER).collect();
        assert_eq!(got, want, "partition p{p}");
    }
}

/// A spooled push that would create a queue over its tenant's limit is dropped at replay
/// (counted in `replayRejected`), as its 403 would have been; the spooled pushes around it
/// are stored, and the spool does not stall on it.
#[actix_rt::test]
async fn a_spooled_push_over_a_tenant_limit_is_dropped_at_replay_and_the_rest_is_stored() {
    // Arrange
    let b = TestBroker::start_with(&[("QUEEN_TENANT_MAX_QUEUES", "1")]).await;
    switch(&b, json!({"push": true})).await;
    for (queue, first) in [("kept", 0), ("over", 0), ("kept", 2)] {
        let (status, body) = push(&b.http, &b.base, &items(queue, "p", first..first + 2)).await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
        assert_all("buffered", &body);
    }

    // Act
    switch(&b, json!({"push": false})).await;
    wait_replayed(&b.http, &b.base, Duration::from_secs(30)).await;

    // Assert
    assert_eq!(spool_metric(&b.http, &b.base, "replayRejected").await, 2);
    assert_eq!(
        read_partition(&b.http, &b.base, "kept", "p").await,
        [0, 1, 2, 3]
    );
    let (status, _) = b.get("/api/v1/resources/queues/over").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    b.stop().await;
}
