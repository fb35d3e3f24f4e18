//! Letting go of idle state: empty partitions and abandoned consumer groups are removed by
//! the sweeper when configured (never queue mode, never a partition holding segments), and
//! the per-queue encryption cache forgets names it saw once.

use std::time::Duration;

use serde_json::{json, Value};

use crate::retention::FAST_SWEEP;
use crate::support::fixtures::{configure, metrics, numbers, sql_count};
use crate::support::{eventually, payloads, TestBroker};

/// With both settings on: an empty partition not written for longer goes, one with
/// segments stays; a group idle for longer is forgotten (coming back it is new and gets
/// the retained backlog again), an active one and queue mode stay.
#[actix_rt::test]
async fn empty_partitions_and_idle_groups_are_removed_when_configured() {
    // Arrange
    let mut vars = FAST_SWEEP.to_vec();
    vars.push(("QUEEN_EMPTY_PARTITION_IDLE_SECS", "60"));
    vars.push(("QUEEN_IDLE_GROUP_SECS", "60"));
    let b = TestBroker::start_with(&vars).await;
    configure(&b, "hk", json!({})).await; // creates the empty Default partition
    b.push("hk", "busy", &numbers(0..1)).await;
    for group in ["old", "new"] {
        let got = b
            .pop_messages(&format!(
                "/api/v1/pop/queue/hk?batch=1&consumerGroup={group}&autoAck=true"
            ))
            .await;
        assert_eq!(payloads(&got), numbers(0..1));
    }
    let queue_mode = b
        .pop_messages("/api/v1/pop/queue/hk?batch=1&autoAck=true")
        .await;
    assert_eq!(queue_mode.len(), 1);
    // Two minutes ago as a value: Citus refuses a STABLE function over a column in an
    // UPDATE of a distributed table (`last_write_at - interval ..`).
    let client = b.sql().await;
    let ago: std::time::SystemTime = client
        .query_one("SELECT now() - interval '2 minutes'", &[])
        .await
        .unwrap()
        .get(0);
    for update in [
        "UPDATE queen.log_partitions SET last_write_at = $1",
        "UPDATE queen.consumer_groups_metadata SET created_at = $1",
        "UPDATE queen.log_consumers \
            SET last_consumed_at = CASE WHEN last_consumed_at IS NULL THEN NULL ELSE $1::timestamptz END, \
                lease_acquired_at = CASE WHEN lease_acquired_at IS NULL THEN NULL ELSE $1::timestamptz END \
          WHERE consumer_group IN ('old', '__QUEUE_MODE__')",
    ] {
        client.execute(update, &[&ago]).await.unwrap();
    }

    // Act
    let swept = eventually(Duration::from_secs(20), || async {
        let partitions = sql_count(&b, "SELECT count(*) FROM queen.log_partitions").await;
        let old = sql_count(
            &b,
            "SELECT count(*) FROM queen.log_consumers WHERE consumer_group = 'old'",
        )
        .await;
        (partitions == 1 && old == 0).then_some(())
    })
    .await;

    // Assert
    assert!(
        swept.is_some(),
        "the empty partition or the idle group stayed"
    );
    assert_eq!(
        sql_count(
            &b,
            "SELECT count(*) FROM queen.log_partitions WHERE name = 'busy'"
        )
        .await,
        1
    );
    assert_eq!(
        sql_count(
            &b,
            "SELECT count(*) FROM queen.consumer_groups_metadata WHERE consumer_group = 'old'"
        )
        .await,
        0
    );
    for kept in ["new", "__QUEUE_MODE__"] {
        assert_eq!(
            sql_count(
                &b,
                &format!(
                    "SELECT count(*) FROM queen.log_consumers WHERE consumer_group = '{kept}'"
                )
            )
            .await,
            1,
            "{kept}"
        );
    }
    let removed = &metrics(&b).await["retention"]["removed"];
    assert_eq!(removed["partitions"], 1, "{removed}");
    assert_eq!(removed["cursors"], 1, "{removed}");
    let again = b
        .pop_messages("/api/v1/pop/queue/hk?batch=1&consumerGroup=old&autoAck=true")
        .await;
    assert_eq!(
        payloads(&again),
        numbers(0..1),
        "a forgotten group starts anew"
    );
    // The removed partition left the directory too, and a push creates it again, from
    // offset 0.
    assert_eq!(
        sql_count(&b, "SELECT count(*) FROM queen.log_partition_names").await,
        1
    );
    b.push("hk", "Default", &numbers(5..6)).await;
    let back = b
        .pop_messages("/api/v1/pop/queue/hk/partition/Default?batch=5&autoAck=true")
        .await;
    assert_eq!(payloads(&back), numbers(5..6));
    assert_eq!(back[0]["offset"], 0, "{back:?}");
}

/// Pushes to queue names used once leave the encryption cache bounded: once they are older
/// than the cache's trust period, a later burst prunes them.
#[actix_rt::test]
async fn the_encryption_cache_forgets_queue_names_pushed_to_once() {
    // Arrange: 1,100 names, one message each, in one push (over the default cap of 1,000
    // partitions a request, so the cap is raised for this broker).
    let b = TestBroker::start_with(&[("QUEEN_MAX_PUSH_PARTITIONS", "2000")]).await;
    burst(&b, "once-a", 1_100).await;
    let after_first = cache(&b).await;
    assert!(after_first >= 1_100, "{after_first}");

    // Act: more new names, until the first ones have expired and been pruned.
    let mut pushed = 1_100;
    let pruned = eventually(Duration::from_secs(60), || {
        pushed += 300;
        let round = pushed;
        let b = &b;
        async move {
            burst(b, &format!("once-{round}"), 300).await;
            let now = cache(b).await;
            (now + 1_000 < round as i64).then_some(now)
        }
    })
    .await;

    // Assert
    assert!(
        pruned.is_some(),
        "the cache kept every name: {}",
        cache(&b).await
    );
}

async fn burst(b: &TestBroker, prefix: &str, n: usize) {
    let items: Vec<Value> = (0..n)
        .map(|i| json!({"queue": format!("{prefix}-{i}"), "payload": i}))
        .collect();
    let (status, body) = b.post("/api/v1/push", &json!({ "items": items })).await;
    assert!(status.is_success(), "push answered {status}: {body}");
}

async fn cache(b: &TestBroker) -> i64 {
    metrics(b).await["caches"]["encryptedQueues"]
        .as_i64()
        .expect("caches.encryptedQueues")
}
