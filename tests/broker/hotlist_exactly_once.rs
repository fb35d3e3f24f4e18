//! The hot-list and legacy paths deliver exactly once, and in partition order, under
//! concurrent consumers.

use std::sync::Arc;
use std::time::Duration;

use crate::support::drain::{assert_exactly_once_in_order, drain, fill};
use crate::support::fixtures::{count, metrics, TIMING};
use crate::support::TestBroker;

/// What every consumer of both paths pops.
const PATH: &str = "/api/v1/pop/queue/same?batch=20&partitions=2&wait=true&timeout=500";

/// The hot-list and the legacy paths deliver the same messages, exactly once and in
/// partition order, under 16 concurrent consumers.
#[actix_rt::test]
async fn the_hotlist_and_legacy_paths_deliver_the_same_messages_exactly_once_to_sixteen_consumers()
{
    let _quiet = TIMING.lock().await;
    // Arrange
    let (partitions, per_partition) = (64usize, 60usize);
    let total = partitions * per_partition;
    let hot = Arc::new(TestBroker::start_with(&[("DB_POOL_SIZE", "24")]).await);
    let legacy =
        Arc::new(TestBroker::start_with(&[("DB_POOL_SIZE", "24"), ("QUEEN_HOTLIST", "0")]).await);
    fill(&hot, "same", partitions, per_partition).await;
    fill(&legacy, "same", partitions, per_partition).await;

    // Act
    let (hot_streams, legacy_streams) = tokio::join!(
        drain(hot.clone(), PATH, 16, total, Duration::from_secs(60)),
        drain(legacy.clone(), PATH, 16, total, Duration::from_secs(60))
    );

    // Assert
    let hot_set = assert_exactly_once_in_order(
        "hot-list",
        &hot_streams,
        partitions as u64,
        per_partition as u64,
    );
    let legacy_set = assert_exactly_once_in_order(
        "legacy",
        &legacy_streams,
        partitions as u64,
        per_partition as u64,
    );
    assert_eq!(hot_set, legacy_set);
    for b in [&hot, &legacy] {
        let left = b.pop_messages("/api/v1/pop/queue/same?batch=10").await;
        assert!(left.is_empty(), "messages left after the drain: {left:?}");
    }
    let (hm, lm) = (metrics(&hot).await, metrics(&legacy).await);
    assert!(
        count(&hm, "/sql/list") > 0 && count(&hm, "/pops/fromRing") > 0,
        "the hot-list broker did not serve from its ring: {hm}"
    );
    assert_eq!(
        count(&lm, "/sql/list"),
        0,
        "the legacy broker used the ring: {lm}"
    );
}
