//! A spool of a few large pushes: the replay reads it in transactions bounded in bytes,
//! not all at once, and stores every push once, in order.

use std::time::Duration;

use reqwest::StatusCode;
use serde_json::json;

use super::{assert_all, push, read_partition, spool_metric, wait_replayed};
use crate::support::TestBroker;

/// Six pushes of 3 MB each (18 MB spooled, under 64 records and 20,000 messages) replay in
/// at least three transactions of at most 8 MiB, and all six are stored in push order.
#[actix_rt::test]
async fn a_spool_of_large_pushes_replays_in_byte_bounded_batches_and_loses_nothing() {
    // Arrange: push maintenance on, six 3 MB pushes answered buffered.
    let b = TestBroker::start().await;
    let queue = "spool-large";
    let (status, _) = b
        .post("/api/v1/system/maintenance", &json!({"push": true}))
        .await;
    assert_eq!(status, StatusCode::OK);
    let filler = "y".repeat(3 << 20);
    for n in 0..6u64 {
        let item = json!({"queue": queue, "partition": "p",
                          "payload": {"n": n, "fill": filler}});
        let (status, body) = push(&b.http, &b.base, &[item]).await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
        assert_all("buffered", &body);
    }
    let before = spool_metric(&b.http, &b.base, "replayBatches").await;

    // Act
    b.post("/api/v1/system/maintenance", &json!({"push": false}))
        .await;
    wait_replayed(&b.http, &b.base, Duration::from_secs(120)).await;

    // Assert
    let batches = spool_metric(&b.http, &b.base, "replayBatches").await - before;
    assert!(batches >= 3, "18 MB replayed in {batches} transactions");
    assert_eq!(spool_metric(&b.http, &b.base, "replayedRecords").await, 6);
    let got = read_partition(&b.http, &b.base, queue, "p").await;
    assert_eq!(got, (0..6).collect::<Vec<u64>>());
    b.stop().await;
}
