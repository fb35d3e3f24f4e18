//! Pop by consumer group and subscription: queue-mode consumers share while each group
//! sees everything, subscriptionMode=new and subscriptionFrom skip the backlog, and a
//! partition created after a group subscribed delivers its whole backlog.

use std::collections::BTreeSet;

use serde_json::{json, Value};

use crate::support::fixtures::offsets;
use crate::support::{payloads, TestBroker};

/// Queue-mode consumers share the messages with no overlap; groups A and B each get them all.
#[actix_rt::test]
async fn queue_mode_consumers_share_while_each_consumer_group_sees_everything() {
    // Arrange
    let b = TestBroker::start().await;
    let mut all = BTreeSet::new();
    for p in 0..4 {
        let items: Vec<Value> = (0..3).map(|i| json!(format!("p{p}-{i}"))).collect();
        all.extend(items.iter().map(Value::to_string));
        b.push("fanout", &format!("p{p}"), &items).await;
    }

    // Act
    let path = "/api/v1/pop/queue/fanout?partitions=2&batch=100";
    let one = b.pop_messages(path).await;
    let two = b.pop_messages(path).await;
    let three = b.pop_messages(path).await;
    let group_a = b
        .pop_messages("/api/v1/pop/queue/fanout?partitions=4&batch=100&consumerGroup=A")
        .await;
    let group_b = b
        .pop_messages("/api/v1/pop/queue/fanout?partitions=4&batch=100&consumerGroup=B")
        .await;

    // Assert
    let set =
        |m: &[Value]| -> BTreeSet<String> { payloads(m).iter().map(Value::to_string).collect() };
    assert_eq!(one.len(), 6, "{one:?}");
    assert_eq!(two.len(), 6, "{two:?}");
    assert!(
        set(&one).is_disjoint(&set(&two)),
        "queue-mode consumers overlapped"
    );
    assert_eq!(&set(&one) | &set(&two), all);
    assert!(
        three.is_empty(),
        "a third queue-mode consumer got {three:?}"
    );
    assert_eq!(group_a.len(), 12);
    assert_eq!(set(&group_a), all);
    assert_eq!(group_b.len(), 12);
    assert_eq!(set(&group_b), all);
    assert!(group_a.iter().all(|m| m["consumerGroup"] == "A"));
}

/// A new group with subscriptionMode=new skips the backlog but gets later pushes.
#[actix_rt::test]
async fn subscription_mode_new_skips_the_backlog_but_delivers_later_pushes() {
    // Arrange
    let b = TestBroker::start().await;
    b.push("subnew", "Default", &[json!(0), json!(1), json!(2)])
        .await;
    let path = "/api/v1/pop/queue/subnew?consumerGroup=late&subscriptionMode=new";
    let at_subscription = b.pop_messages(path).await;

    // Act
    b.push("subnew", "Default", &[json!(3), json!(4)]).await;
    let late = b.pop_messages(path).await;
    let everything = b
        .pop_messages("/api/v1/pop/queue/subnew?consumerGroup=early")
        .await;

    // Assert
    assert!(
        at_subscription.is_empty(),
        "backlog delivered: {at_subscription:?}"
    );
    assert_eq!(payloads(&late), vec![json!(3), json!(4)]);
    assert_eq!(offsets(&late), vec![3, 4]);
    assert_eq!(
        payloads(&everything),
        (0..5).map(|n| json!(n)).collect::<Vec<_>>()
    );
}

/// A new group with subscriptionFrom=<a time between two pushes> starts at the second push.
#[actix_rt::test]
async fn subscription_from_a_timestamp_starts_at_the_first_message_pushed_after_it() {
    // Arrange
    let b = TestBroker::start().await;
    b.push("subfrom", "Default", &[json!("old-0"), json!("old-1")])
        .await;
    let between: String = b
        .sql()
        .await
        .query_one(
            "SELECT to_char(clock_timestamp() AT TIME ZONE 'UTC', \
             'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"')",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    b.push("subfrom", "Default", &[json!("new-0"), json!("new-1")])
        .await;

    // Act
    let messages = b
        .pop_messages(&format!(
            "/api/v1/pop/queue/subfrom?consumerGroup=since&subscriptionFrom={}",
            between.replace(':', "%3A")
        ))
        .await;

    // Assert
    assert_eq!(payloads(&messages), vec![json!("new-0"), json!("new-1")]);
    assert_eq!(offsets(&messages), vec![2, 3]);
}

/// A partition created after a group subscribed with mode new delivers its whole backlog.
#[actix_rt::test]
async fn a_partition_created_after_a_group_subscribed_delivers_its_whole_backlog() {
    // Arrange
    let b = TestBroker::start().await;
    b.push("late-part", "P1", &[json!("p1-0"), json!("p1-1")])
        .await;
    let path = "/api/v1/pop/queue/late-part?consumerGroup=g&subscriptionMode=new&batch=10";
    let at_subscription = b.pop_messages(path).await;
    assert!(at_subscription.is_empty(), "{at_subscription:?}");

    // Act
    b.push(
        "late-part",
        "P2",
        &[json!("p2-0"), json!("p2-1"), json!("p2-2")],
    )
    .await;
    let messages = b.pop_messages(path).await;

    // Assert
    assert_eq!(
        payloads(&messages),
        vec![json!("p2-0"), json!("p2-1"), json!("p2-2")]
    );
    assert!(messages.iter().all(|m| m["partition"] == "P2"));
    assert_eq!(offsets(&messages), vec![0, 1, 2]);
}
