//! Pop over HTTP: partition independence and the global budget, the empty and refused
//! answers, the three routes, auto-ack, lease expiry, consumer groups and subscriptions,
//! the visibility gates, the empty-partition cursor seal and long-polling.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::support::{eventually, payloads, TestBroker};

/// A partition leased by one consumer does not block another partition for the same group.
#[actix_rt::test]
async fn a_leased_partition_does_not_block_another_partition_for_the_same_group() {
    // Arrange
    let b = TestBroker::start().await;
    b.push("indep", "a", &[json!("a0"), json!("a1"), json!("a2")])
        .await;
    b.push("indep", "b", &[json!("b0"), json!("b1"), json!("b2")])
        .await;

    // Act
    let first = b.pop_messages("/api/v1/pop/queue/indep?batch=10").await;
    let second = b.pop_messages("/api/v1/pop/queue/indep?batch=10").await;
    let third = b.pop_messages("/api/v1/pop/queue/indep?batch=10").await;

    // Assert
    let mut got = vec![payloads(&first), payloads(&second)];
    got.sort_by_key(|p| p.first().map(Value::to_string));
    assert_eq!(
        got,
        vec![
            vec![json!("a0"), json!("a1"), json!("a2")],
            vec![json!("b0"), json!("b1"), json!("b2")],
        ]
    );
    assert_ne!(first[0]["leaseId"], second[0]["leaseId"]);
    assert!(third.is_empty(), "both partitions are leased: {third:?}");
}

/// `batch` is one budget for the whole answer and `partitions` caps the claimed partitions,
/// all under one leaseId, on a group's first pop and on a later one alike.
#[actix_rt::test]
async fn a_pop_of_two_partitions_and_batch_five_shares_the_budget_under_one_lease() {
    // Arrange: partitions of four (the budget binds) and of two (the cap binds); a "warm"
    // queue had an empty pop before its pushes, so its pop is not the group's first contact.
    let b = TestBroker::start().await;
    let cases = [
        ("budget-cold", 4, 5usize),
        ("cap-cold", 2, 4usize),
        ("budget-warm", 4, 5usize),
        ("cap-warm", 2, 4usize),
    ];
    for (queue, per_partition, _) in cases {
        if queue.ends_with("warm") {
            let first_contact = b.pop_messages(&format!("/api/v1/pop/queue/{queue}")).await;
            assert!(first_contact.is_empty());
        }
        for p in ["p0", "p1", "p2"] {
            let items: Vec<Value> = (0..per_partition)
                .map(|i| json!({ "p": p, "i": i }))
                .collect();
            b.push(queue, p, &items).await;
        }
    }

    for (queue, _, total) in cases {
        // Act
        let (status, body) = b
            .get(&format!("/api/v1/pop/queue/{queue}?partitions=2&batch=5"))
            .await;

        // Assert
        assert_eq!(status, StatusCode::OK, "{queue}: {body}");
        let messages = body["messages"].as_array().expect("messages");
        assert_eq!(messages.len(), total, "{queue}: {body}");
        let lease = body["leaseId"].as_str().expect("leaseId");
        assert!(!lease.is_empty());
        assert_eq!(body["partitionsClaimed"], 2, "{queue}: {body}");
        let mut per_partition: BTreeMap<String, Vec<i64>> = BTreeMap::new();
        for m in messages {
            assert_eq!(m["leaseId"], lease, "{m}");
            per_partition
                .entry(m["partitionId"].as_str().unwrap().to_owned())
                .or_default()
                .push(m["data"]["i"].as_i64().unwrap());
        }
        assert_eq!(per_partition.len(), 2, "{queue}: {body}");
        for (p, got) in per_partition {
            let prefix: Vec<i64> = (0..got.len() as i64).collect();
            assert_eq!(
                got, prefix,
                "{queue}: partition {p} is not delivered from its head in order"
            );
        }
    }
}

/// An empty queue, an unknown queue and an unknown partition answer 204 with no body.
#[actix_rt::test]
async fn nothing_to_deliver_answers_204_with_an_empty_body() {
    // Arrange
    let b = TestBroker::start().await;
    configure(&b, "empty-q", json!({})).await;

    for path in [
        "/api/v1/pop/queue/empty-q",
        "/api/v1/pop/queue/empty-q/partition/Default",
        "/api/v1/pop/queue/empty-q?consumerGroup=g",
        "/api/v1/pop/queue/never-made",
        "/api/v1/pop/queue/never-made/partition/nope",
        "/api/v1/pop/queue/empty-q/partition/nope",
    ] {
        // Act
        let (status, body) = b.get(path).await;

        // Assert
        assert_eq!(status, StatusCode::NO_CONTENT, "{path}: {body}");
        assert_eq!(body, Value::Null, "{path}: a 204 carries no body");
    }
}

/// A bare discovery pop, batch=0 and a non-numeric batch answer 400 with a JSON error.
#[actix_rt::test]
async fn malformed_pops_answer_400_with_a_json_error() {
    // Arrange
    let b = TestBroker::start().await;
    b.push("bad-pop", "Default", &[json!(1)]).await;

    for path in [
        "/api/v1/pop",
        "/api/v1/pop/queue/bad-pop?batch=0",
        "/api/v1/pop/queue/bad-pop?batch=abc",
        "/api/v1/pop/queue/bad-pop/partition/Default?batch=0",
    ] {
        // Act
        let (status, body) = b.get(path).await;

        // Assert
        assert_eq!(status, StatusCode::BAD_REQUEST, "{path}: {body}");
        assert!(
            body["error"].as_str().is_some_and(|e| !e.is_empty()),
            "{path}: no JSON error in {body}"
        );
    }
    let still_there = b.pop_messages("/api/v1/pop/queue/bad-pop").await;
    assert_eq!(payloads(&still_there), vec![json!(1)]);
}

/// The specific route pops its partition, the wildcard any partition, discovery a matching queue.
#[actix_rt::test]
async fn the_three_pop_routes_deliver_from_the_scope_they_name() {
    // Arrange
    let b = TestBroker::start().await;
    configure_in(&b, "routes-a", "ns-a", "task-a").await;
    configure_in(&b, "routes-b", "ns-b", "task-b").await;
    b.push("routes-a", "Default", &[json!("a-default")]).await;
    b.push("routes-a", "P2", &[json!("a-p2")]).await;
    b.push("routes-b", "Default", &[json!("b-default")]).await;

    // Act
    let specific = b
        .pop_messages("/api/v1/pop/queue/routes-a/partition/P2")
        .await;
    let wildcard = b.pop_messages("/api/v1/pop/queue/routes-a").await;
    let by_task = b.pop_messages("/api/v1/pop?task=task-b").await;
    b.ack_all(&specific, "completed", None).await;
    b.ack_all(&wildcard, "completed", None).await;
    b.push("routes-a", "P3", &[json!("a-p3")]).await;
    b.push("routes-b", "B2", &[json!("b-b2")]).await;
    let by_namespace = b.pop_messages("/api/v1/pop?namespace=ns-a").await;
    let nothing_left = b.pop_messages("/api/v1/pop?namespace=ns-a").await;

    // Assert
    assert_eq!(payloads(&specific), vec![json!("a-p2")]);
    assert_eq!(specific[0]["partition"], "P2");
    assert_eq!(payloads(&wildcard), vec![json!("a-default")]);
    assert_eq!(wildcard[0]["partition"], "Default");
    assert_eq!(payloads(&by_task), vec![json!("b-default")]);
    assert_eq!(by_task[0]["queue"], "routes-b");
    assert_eq!(payloads(&by_namespace), vec![json!("a-p3")]);
    assert_eq!(by_namespace[0]["queue"], "routes-a");
    assert!(
        nothing_left.is_empty(),
        "ns-a has nothing unleased left, and routes-b is in another namespace: {nothing_left:?}"
    );
}

/// An auto-acked pop has no lease, moves the cursor, and never comes back (first pop and later).
#[actix_rt::test]
async fn an_auto_acked_pop_has_no_lease_and_is_never_redelivered() {
    // Arrange
    let b = TestBroker::start().await;
    b.push("auto", "Default", &[json!(0), json!(1), json!(2)])
        .await;

    // Act: a one-second lease override would bring the messages back if a lease were taken.
    let path = "/api/v1/pop/queue/auto?autoAck=true&leaseSeconds=1&batch=2";
    let (first_status, first) = b.get(path).await;
    let (second_status, second) = b.get(path).await;
    let started = Instant::now();
    let (later, later_body) = b.get("/api/v1/pop/queue/auto?wait=true&timeout=2000").await;

    // Assert
    assert_eq!(first_status, StatusCode::OK, "{first}");
    assert_eq!(second_status, StatusCode::OK, "{second}");
    let mut messages = first["messages"].as_array().expect("messages").clone();
    messages.extend(
        second["messages"]
            .as_array()
            .expect("messages")
            .iter()
            .cloned(),
    );
    assert_eq!(payloads(&messages), vec![json!(0), json!(1), json!(2)]);
    assert_eq!(first["leaseId"], "");
    assert_eq!(second["leaseId"], "");
    assert!(messages.iter().all(|m| m["leaseId"] == ""), "{messages:?}");
    assert_eq!(later, StatusCode::NO_CONTENT, "redelivered: {later_body}");
    assert!(started.elapsed() >= Duration::from_millis(1500));
    let pid = partition_id(&messages[0]);
    let (committed, worker) = consumer_row(&b, pid, "__QUEUE_MODE__").await;
    assert_eq!(committed, 2);
    assert_eq!(worker, None);
}

/// When a lease expires, the same messages are delivered again with deliveryAttempt 2.
#[actix_rt::test]
async fn an_expired_lease_is_redelivered_with_delivery_attempt_two() {
    // Arrange
    let b = TestBroker::start().await;
    b.push("expiry", "Default", &[json!("m0"), json!("m1")])
        .await;
    let first = b
        .pop_messages("/api/v1/pop/queue/expiry?leaseSeconds=1")
        .await;
    assert_eq!(payloads(&first), vec![json!("m0"), json!("m1")]);
    assert!(first.iter().all(|m| m["deliveryAttempt"] == 1), "{first:?}");
    let while_leased = b.pop_messages("/api/v1/pop/queue/expiry").await;
    assert!(while_leased.is_empty(), "delivered under a live lease");

    // Act
    let again = eventually(Duration::from_secs(5), || async {
        let m = b.pop_messages("/api/v1/pop/queue/expiry").await;
        (!m.is_empty()).then_some(m)
    })
    .await
    .expect("redelivered after the lease expired");

    // Assert
    assert_eq!(ids(&again), ids(&first));
    assert_eq!(offsets(&again), vec![0, 1]);
    assert!(again.iter().all(|m| m["deliveryAttempt"] == 2), "{again:?}");
    assert_ne!(again[0]["leaseId"], first[0]["leaseId"]);
}

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

/// windowBuffer holds a partition while it keeps receiving messages, then delivers them together.
#[actix_rt::test]
async fn window_buffer_holds_a_partition_until_it_has_been_quiet_for_the_window() {
    // Arrange
    let b = TestBroker::start().await;
    configure(&b, "window", json!({ "windowBuffer": 1 })).await;
    b.push("window", "Default", &[json!("w0")]).await;
    let right_after_first = b.pop_messages("/api/v1/pop/queue/window").await;
    // Spacing the pushes is the point of the test, not a wait for something.
    tokio::time::sleep(Duration::from_millis(400)).await;
    b.push("window", "Default", &[json!("w1")]).await;
    let last_push = Instant::now();
    let right_after_second = b.pop_messages("/api/v1/pop/queue/window").await;

    // Act
    let delivered = eventually(Duration::from_secs(5), || async {
        let m = b.pop_messages("/api/v1/pop/queue/window").await;
        (!m.is_empty()).then_some(m)
    })
    .await
    .expect("delivered once the partition went quiet");
    let quiet_for = last_push.elapsed();

    // Assert
    assert!(right_after_first.is_empty(), "{right_after_first:?}");
    assert!(right_after_second.is_empty(), "{right_after_second:?}");
    assert_eq!(payloads(&delivered), vec![json!("w0"), json!("w1")]);
    assert!(
        quiet_for >= Duration::from_millis(900),
        "delivered {quiet_for:?} after the last push, inside the 1 s window"
    );
}

/// delayedProcessing hides each message until it is old enough, oldest first.
#[actix_rt::test]
async fn delayed_processing_holds_each_message_until_it_is_old_enough() {
    // Arrange
    let b = TestBroker::start().await;
    configure(&b, "delayed", json!({ "delayedProcessing": 1 })).await;
    b.push("delayed", "Default", &[json!("d0")]).await;
    let first_pushed = Instant::now();
    let right_away = b.pop_messages("/api/v1/pop/queue/delayed").await;
    // Spacing the pushes is the point of the test, not a wait for something.
    tokio::time::sleep(Duration::from_millis(600)).await;
    b.push("delayed", "Default", &[json!("d1")]).await;
    let second_pushed = Instant::now();

    // Act
    let poll = || async {
        let m = b.pop_messages("/api/v1/pop/queue/delayed").await;
        (!m.is_empty()).then_some(m)
    };
    let first = eventually(Duration::from_secs(5), poll)
        .await
        .expect("the first message became visible");
    let first_age = first_pushed.elapsed();
    b.ack_all(&first, "completed", None).await;
    let second = eventually(Duration::from_secs(5), poll)
        .await
        .expect("the second message became visible");
    let second_age = second_pushed.elapsed();

    // Assert
    assert!(right_away.is_empty(), "{right_away:?}");
    assert_eq!(payloads(&first), vec![json!("d0")], "only d0 is old enough");
    assert!(first_age >= Duration::from_millis(900), "{first_age:?}");
    assert_eq!(payloads(&second), vec![json!("d1")]);
    assert!(second_age >= Duration::from_millis(900), "{second_age:?}");
}

/// A partition whose segments are all gone seals the cursor at its last offset, both for a
/// group that already knew the partition and for a group seeing it for the first time.
#[actix_rt::test]
async fn a_partition_whose_segments_are_gone_seals_the_cursor_at_its_last_offset() {
    // Arrange: queue mode has popped before the push, group g has not.
    let b = TestBroker::start().await;
    let first_contact = b.pop_messages("/api/v1/pop/queue/seal").await;
    assert!(first_contact.is_empty());
    let answers = b
        .push("seal", "P", &(0..5).map(|n| json!(n)).collect::<Vec<_>>())
        .await;
    let pid: i64 = answers[0]["partitionId"].as_str().unwrap().parse().unwrap();
    let sql = b.sql().await;
    sql.execute(
        "DELETE FROM queen.log_segments WHERE partition_id = $1",
        &[&pid],
    )
    .await
    .unwrap();

    // Act
    let (known_status, known_body) = b.get("/api/v1/pop/queue/seal").await;
    let (new_status, new_body) = b.get("/api/v1/pop/queue/seal?consumerGroup=g").await;

    // Assert
    assert_eq!(known_status, StatusCode::NO_CONTENT, "{known_body}");
    assert_eq!(new_status, StatusCode::NO_CONTENT, "{new_body}");
    let last_offset: i64 = sql
        .query_one(
            "SELECT last_offset FROM queen.log_partitions WHERE id = $1",
            &[&pid],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(last_offset, 4);
    for group in ["__QUEUE_MODE__", "g"] {
        let (committed, worker) = consumer_row(&b, pid, group).await;
        assert_eq!(committed, last_offset, "{group}");
        assert_eq!(worker, None, "{group}: a seal is not a claim");
    }
    b.push("seal", "P", &[json!("after")]).await;
    let after = b.pop_messages("/api/v1/pop/queue/seal").await;
    assert_eq!(payloads(&after), vec![json!("after")]);
    assert_eq!(offsets(&after), vec![5]);
}

/// A waiting pop receives a message pushed while it waits, well before its timeout.
#[actix_rt::test]
async fn a_waiting_pop_receives_a_message_pushed_while_it_waits() {
    // Arrange
    let b = TestBroker::start().await;
    configure(&b, "longpoll", json!({})).await;
    let started = Instant::now();

    // Act
    let ((status, body, answered_after), _) = tokio::join!(
        async {
            let (status, body) = b
                .get("/api/v1/pop/queue/longpoll?wait=true&timeout=10000")
                .await;
            (status, body, started.elapsed())
        },
        async {
            tokio::time::sleep(Duration::from_millis(300)).await;
            b.push("longpoll", "Default", &[json!("hello")]).await
        }
    );

    // Assert
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(
        payloads(body["messages"].as_array().unwrap()),
        vec![json!("hello")]
    );
    assert!(
        answered_after >= Duration::from_millis(300),
        "{answered_after:?}"
    );
    assert!(
        answered_after < Duration::from_secs(3),
        "answered only after {answered_after:?}"
    );
}

/// A waiting pop on an empty queue answers 204 after roughly its timeout.
#[actix_rt::test]
async fn a_waiting_pop_on_an_empty_queue_answers_204_after_its_timeout() {
    // Arrange
    let b = TestBroker::start().await;
    configure(&b, "longpoll-empty", json!({})).await;
    let started = Instant::now();

    // Act
    let (status, body) = b
        .get("/api/v1/pop/queue/longpoll-empty?wait=true&timeout=500")
        .await;
    let elapsed = started.elapsed();

    // Assert
    assert_eq!(status, StatusCode::NO_CONTENT, "{body}");
    assert_eq!(body, Value::Null);
    assert!(elapsed >= Duration::from_millis(450), "{elapsed:?}");
    assert!(elapsed < Duration::from_millis(2500), "{elapsed:?}");
}

/// Configures a queue with the given options (no namespace or task).
async fn configure(b: &TestBroker, queue: &str, options: Value) {
    let (status, body) = b
        .post(
            "/api/v1/configure",
            &json!({ "queue": queue, "namespace": null, "task": null, "options": options }),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["configured"], true, "{body}");
}

/// Configures a queue under a namespace and a task.
async fn configure_in(b: &TestBroker, queue: &str, namespace: &str, task: &str) {
    let (status, body) = b
        .post(
            "/api/v1/configure",
            &json!({ "queue": queue, "namespace": namespace, "task": task, "options": {} }),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
}

/// The numeric partition id of a popped message.
fn partition_id(message: &Value) -> i64 {
    message["partitionId"]
        .as_str()
        .expect("partitionId is a string")
        .parse()
        .expect("partitionId is a number")
}

/// The message ids of popped messages.
fn ids(messages: &[Value]) -> Vec<Value> {
    messages.iter().map(|m| m["id"].clone()).collect()
}

/// The offsets of popped messages.
fn offsets(messages: &[Value]) -> Vec<i64> {
    messages
        .iter()
        .map(|m| m["offset"].as_i64().unwrap())
        .collect()
}

/// A group's cursor and lease holder on a partition.
async fn consumer_row(b: &TestBroker, pid: i64, group: &str) -> (i64, Option<String>) {
    let row = b
        .sql()
        .await
        .query_one(
            "SELECT committed, worker_id FROM queen.log_consumers \
             WHERE partition_id = $1 AND consumer_group = $2",
            &[&pid, &group],
        )
        .await
        .unwrap();
    (row.get(0), row.get(1))
}
