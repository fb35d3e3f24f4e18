//! Clients that drop pushes and acks mid-way at random moments (they give up after 0.2-10 ms
//! and re-send the same body, waiting twice as long each time): a push dropped after its
//! commit answers `duplicate` when re-sent and is stored once, a push dropped before it is
//! stored by the re-send, and an ack dropped before its commit only lets its lease expire.
//! Nothing stored is lost; a message comes twice only when an ack of it failed.

use std::time::Duration;

use serde_json::json;

use crate::support::fixtures::configure;
use crate::support::load::{Load, NO_ANSWER};
use crate::support::TestBroker;

const QUEUE: &str = "dropped";

#[actix_rt::test]
async fn pushes_and_acks_dropped_mid_way_lose_nothing_and_store_nothing_twice() {
    // Arrange
    let b = TestBroker::start().await;
    configure(&b, QUEUE, json!({ "leaseTime": 2 })).await;
    let load = Load::new(vec![b.base.clone()], QUEUE, 8, 10).impatient();

    // Act: three seconds of impatient load, then a drain checked for losses and
    // unexplained duplicates.
    let running = load.start(3, 3);
    tokio::time::sleep(Duration::from_secs(3)).await;
    let stored = running.finish().await;

    // Assert: requests were dropped, and nothing answered an error.
    let summary = load.failures.summary();
    eprintln!("stored {} messages; failures: {summary:?}", stored.len());
    for what in ["push", "ack"] {
        assert!(
            summary
                .get(&(what, NO_ANSWER.as_u16()))
                .copied()
                .unwrap_or(0)
                > 0,
            "no {what} was dropped mid-way: {summary:?}"
        );
    }
    load.failures.with(|failures| {
        let bad: Vec<_> = failures
            .iter()
            .filter(|f| f.status != NO_ANSWER)
            .map(|f| format!("{}: {} {}", f.what, f.status, f.body))
            .collect();
        assert!(bad.is_empty(), "answers that were errors: {bad:?}");
    });
}
