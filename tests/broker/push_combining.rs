//! Combined pushes: concurrent pushes share commits, pushes to one partition share an
//! append, and a transaction id repeated across combined requests is still a duplicate.

use std::collections::HashSet;

use futures_util::future::join_all;
use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::support::lock_waiters::lock_partition;
use crate::support::TestBroker;

/// Sixteen concurrent pushes to one partition (a window long enough to gather them) are
/// stored in fewer commits than requests, with dense offsets, every repeat across requests
/// answered duplicate of whichever occurrence was stored first, and every transaction id
/// delivered once, as the message its answers named.
#[actix_rt::test]
async fn concurrent_pushes_to_one_partition_share_commits_and_keep_dedup() {
    // Arrange: a 50 ms combining window and one writer, so the pushes gather.
    let b = TestBroker::start_with(&[
        ("QUEEN_PUSH_WRITERS", "1"),
        ("QUEEN_PUSH_COMBINE_WINDOW_US", "50000"),
    ])
    .await;
    // Request r pushes ids r*10 .. r*10+9 and repeats the id of request r-1's first item.
    let bodies: Vec<Value> = (0..16)
        .map(|r: i64| {
            let mut items: Vec<Value> = (0..10)
                .map(|k| json!({"queue": "combined", "partition": "one", "transactionId": format!("t{}", r * 10 + k), "payload": r * 10 + k}))
                .collect();
            if r > 0 {
                items.push(json!({"queue": "combined", "partition": "one", "transactionId": format!("t{}", (r - 1) * 10), "payload": -1}));
            }
            json!({ "items": items })
        })
        .collect();

    // Act
    let answers = join_all(bodies.iter().map(|body| b.post("/api/v1/push", body))).await;

    // Assert
    let mut offsets = Vec::new();
    let mut message_of: std::collections::HashMap<String, Value> = Default::default();
    for (status, body) in &answers {
        assert_eq!(*status, StatusCode::CREATED, "{body}");
        for a in body.as_array().unwrap() {
            if a["status"] == "queued" {
                offsets.push(a["offset"].as_i64().unwrap());
                message_of.insert(
                    a["transactionId"].as_str().unwrap().to_owned(),
                    a["messageId"].clone(),
                );
            }
        }
    }
    offsets.sort_unstable();
    assert_eq!(
        offsets,
        (0..160).collect::<Vec<_>>(),
        "160 distinct ids, dense offsets"
    );
    for (_, body) in &answers {
        for a in body.as_array().unwrap() {
            if a["status"] == "duplicate" {
                let txn = a["transactionId"].as_str().unwrap();
                assert_eq!(a["messageId"], message_of[txn], "{a}");
            }
        }
    }
    let duplicates: usize = answers
        .iter()
        .map(|(_, body)| {
            body.as_array()
                .unwrap()
                .iter()
                .filter(|a| a["status"] == "duplicate")
                .count()
        })
        .sum();
    assert_eq!(duplicates, 15);
    let (_, metrics) = b.get("/metrics").await;
    let requests = metrics["push"]["combinedRequests"].as_u64().unwrap();
    let commits = metrics["push"]["commits"].as_u64().unwrap();
    assert_eq!(requests, 16);
    assert!(
        commits < requests,
        "{commits} commits for {requests} requests"
    );
    let mut seen = HashSet::new();
    loop {
        let popped = b.pop_messages("/api/v1/pop/queue/combined?batch=100").await;
        if popped.is_empty() {
            break;
        }
        for m in &popped {
            let txn = m["transactionId"].as_str().unwrap().to_owned();
            assert_eq!(m["id"], message_of[&txn], "{m}");
            assert!(seen.insert(txn), "delivered twice: {m}");
        }
        let acks = b.ack_all(&popped, "completed", None).await;
        assert!(acks.iter().all(|a| a["success"] == true), "{acks:?}");
    }
    let want: HashSet<String> = (0..160).map(|n| format!("t{n}")).collect();
    assert_eq!(seen, want);
}

/// Two pushes combined into one append share one stored segment; re-sending the second
/// (a client that gave up waiting) answers `duplicate` of its stored messages and stores
/// nothing. The window held each request's run as its own segment, so its duplicate check
/// once read the segment at the wrong base, found nothing, and stored the ids again.
#[actix_rt::test]
async fn a_push_combined_into_a_shared_segment_is_a_duplicate_when_sent_again() {
    // Arrange: one writer and a 200 ms window, so both pushes land in one append.
    let b = TestBroker::start_with(&[
        ("QUEEN_PUSH_WRITERS", "1"),
        ("QUEEN_PUSH_COMBINE_WINDOW_US", "200000"),
    ])
    .await;
    let body = |first: i64| {
        let items: Vec<Value> = (first..first + 5)
            .map(|n| json!({"queue": "shared", "partition": "p", "transactionId": format!("t{n}"), "payload": n}))
            .collect();
        json!({ "items": items })
    };
    let (first, second) = (body(0), body(5));
    let together = join_all([&first, &second].map(|b2| b.post("/api/v1/push", b2))).await;
    for (status, answer) in &together {
        assert_eq!(*status, StatusCode::CREATED, "{answer}");
    }
    let segments = crate::support::fixtures::sql_count(
        &b,
        "SELECT count(*) FROM queen.log_segments s JOIN queen.log_partitions p \
         ON p.id = s.partition_id WHERE p.name = 'p'",
    )
    .await;
    assert_eq!(
        segments, 1,
        "the two pushes were not combined into one segment"
    );

    // Act
    let (status, again) = b.post("/api/v1/push", &second).await;

    // Assert
    assert_eq!(status, StatusCode::CREATED, "{again}");
    let statuses: Vec<&str> = again
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["status"].as_str().unwrap())
        .collect();
    assert_eq!(statuses, vec!["duplicate"; 5], "{again}");
    let messages = b.pop_messages("/api/v1/pop/queue/shared?batch=100").await;
    assert_eq!(messages.len(), 10, "{messages:?}");
}

/// Backends of this test's database waiting for a lock (other tests run beside it on
/// the same server, each in its own database). On the Citus layout the push waits on the
/// partition's worker, which `citus_stat_activity` shows beside the coordinator.
async fn lock_waiters(sql: &tokio_postgres::Client) -> i64 {
    let view = if crate::support::citus::script().is_some() {
        "citus_stat_activity"
    } else {
        "pg_stat_activity"
    };
    sql.query_one(
        &format!(
            "SELECT count(*) FROM {view} \
             WHERE datname = current_database() AND wait_event_type = 'Lock'"
        ),
        &[],
    )
    .await
    .unwrap()
    .get(0)
}

/// Waits until `n` backends of this test's database wait for a lock.
async fn until_lock_waiters(sql: &tokio_postgres::Client, n: i64) {
    let found = crate::support::eventually(std::time::Duration::from_secs(10), || async {
        (lock_waiters(sql).await >= n).then_some(())
    })
    .await;
    assert!(found.is_some(), "no push waited for the partition lock");
}

fn one_push(queue: &str, partition: &str, id: &str) -> Value {
    json!({"items": [{"queue": queue, "partition": partition, "transactionId": id, "payload": id}]})
}

/// A broker with `writers` writers and no combining window, where partitions a and b of
/// `queue` exist.
async fn writers_and_partitions(writers: &str, queue: &str) -> TestBroker {
    let b = TestBroker::start_with(&[
        ("QUEEN_PUSH_WRITERS", writers),
        ("QUEEN_PUSH_COMBINE_WINDOW_US", "0"),
    ])
    .await;
    b.push(queue, "a", &[json!(0)]).await;
    b.push(queue, "b", &[json!(0)]).await;
    b
}

/// Push commits the broker counted so far.
async fn push_commits(b: &TestBroker) -> u64 {
    let (_, metrics) = b.get("/metrics").await;
    metrics["push"]["commits"].as_u64().unwrap()
}

/// Sends a push in a task of its own; its status when it is answered.
fn send(b: &TestBroker, body: Value) -> tokio::task::JoinHandle<StatusCode> {
    let (client, url) = (reqwest::Client::new(), b.url("/api/v1/push"));
    tokio::spawn(async move { client.post(url).json(&body).send().await.unwrap().status() })
}

/// With writers to spare and no combining window, pushes that arrive while their partition
/// is being written do not start writers of their own (they would only queue on the
/// partition's lock in PostgreSQL): they wait, and the next commit holds them all. A push
/// to another partition meanwhile is written at once, beside the blocked one.
#[actix_rt::test]
async fn pushes_to_a_partition_being_written_wait_for_it_and_share_the_next_commit() {
    // Arrange: the test holds partition a's row lock.
    let b = writers_and_partitions("2", "held").await;
    let commits_before = push_commits(&b).await;
    let mut locker = b.sql().await;
    let watcher = b.sql().await;
    let lock = lock_partition(&mut locker, "held", "a").await;

    // Act: one push to a blocks in PostgreSQL; five more to a arrive behind it.
    let first = send(&b, one_push("held", "a", "a-first"));
    until_lock_waiters(&watcher, 1).await;
    let followers: Vec<_> = (0..5)
        .map(|k| send(&b, one_push("held", "a", &format!("a-{k}"))))
        .collect();
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    // A push to partition b, while a is still locked.
    let other = tokio::time::timeout(
        std::time::Duration::from_secs(5),
        b.post("/api/v1/push", &one_push("held", "b", "b-1")),
    )
    .await;
    let waiters = lock_waiters(&watcher).await;
    lock.rollback().await.unwrap();
    let first = first.await.unwrap();
    let followers = join_all(followers).await;

    // Assert
    let (status, body) = other.expect("the push to partition b waited for partition a");
    assert_eq!(status, StatusCode::CREATED, "{body}");
    assert_eq!(waiters, 1, "only the first push to a waited in PostgreSQL");
    assert_eq!(first, StatusCode::CREATED);
    for status in followers {
        assert_eq!(status.unwrap(), StatusCode::CREATED);
    }
    let commits = push_commits(&b).await - commits_before;
    assert_eq!(
        commits, 3,
        "a's first push, b's push, and a's five followers together"
    );
    let popped = b
        .pop_messages("/api/v1/pop/queue/held/partition/a?batch=100")
        .await;
    let mut ids: Vec<&str> = popped
        .iter()
        .map(|m| m["transactionId"].as_str().unwrap())
        .collect();
    ids.sort_unstable();
    assert_eq!(ids.len(), 7, "{ids:?}");
    let want = ["a-0", "a-1", "a-2", "a-3", "a-4", "a-first"];
    assert!(want.iter().all(|id| ids.contains(id)), "{ids:?}");
}

/// A push that waits for one of its partitions keeps its place in the others: a later push
/// to its other partition waits behind it instead of overtaking it (so a push touching
/// several busy partitions is never passed over for ever), and lands after it.
#[actix_rt::test]
async fn a_later_push_never_overtakes_a_waiting_push_to_the_same_partition() {
    // Arrange: the test holds partition a's row lock.
    let b = writers_and_partitions("2", "fifo").await;
    let mut locker = b.sql().await;
    let watcher = b.sql().await;
    let lock = lock_partition(&mut locker, "fifo", "a").await;

    // Act: a push to a blocks in PostgreSQL; a push to a and b waits for a; then a push to b.
    let first = send(&b, one_push("fifo", "a", "a-1"));
    until_lock_waiters(&watcher, 1).await;
    let both = send(
        &b,
        json!({"items": [
            {"queue": "fifo", "partition": "a", "transactionId": "a-2", "payload": 2},
            {"queue": "fifo", "partition": "b", "transactionId": "b-2", "payload": 2},
        ]}),
    );
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    let later = send(&b, one_push("fifo", "b", "b-3"));
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    let later_done_while_locked = later.is_finished();
    lock.rollback().await.unwrap();
    let statuses = [
        first.await.unwrap(),
        both.await.unwrap(),
        later.await.unwrap(),
    ];

    // Assert
    assert!(
        !later_done_while_locked,
        "the push to b overtook the waiting push to a and b"
    );
    assert!(
        statuses.iter().all(|s| *s == StatusCode::CREATED),
        "{statuses:?}"
    );
    let popped = b
        .pop_messages("/api/v1/pop/queue/fifo/partition/b?batch=10")
        .await;
    let ids: Vec<&str> = popped
        .iter()
        .map(|m| m["transactionId"].as_str().unwrap())
        .collect();
    assert_eq!(&ids[1..], ["b-2", "b-3"], "{ids:?}");
}

/// Pushes to different partitions that arrive while every writer is busy wait together and
/// share one transaction and one commit (group commit), each stored.
#[actix_rt::test]
async fn pushes_to_several_partitions_waiting_for_a_writer_share_one_commit() {
    // Arrange: one writer, blocked by the test's lock on partition a.
    let b = writers_and_partitions("1", "group").await;
    let commits_before = push_commits(&b).await;
    let mut locker = b.sql().await;
    let watcher = b.sql().await;
    let lock = lock_partition(&mut locker, "group", "a").await;
    let first = send(&b, one_push("group", "a", "a-1"));
    until_lock_waiters(&watcher, 1).await;

    // Act: three pushes to three other partitions while the writer is blocked.
    let others: Vec<_> = ["b", "c", "d"]
        .iter()
        .map(|p| send(&b, one_push("group", p, &format!("{p}-1"))))
        .collect();
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let answered_while_blocked = others.iter().filter(|o| o.is_finished()).count();
    lock.rollback().await.unwrap();
    let first = first.await.unwrap();
    let others = join_all(others).await;

    // Assert
    assert_eq!(
        answered_while_blocked, 0,
        "a push went past the only writer"
    );
    assert_eq!(first, StatusCode::CREATED);
    for status in others {
        assert_eq!(status.unwrap(), StatusCode::CREATED);
    }
    let commits = push_commits(&b).await - commits_before;
    assert_eq!(commits, 2, "a's push, then b's, c's and d's together");
    for p in ["b", "c", "d"] {
        let popped = b
            .pop_messages(&format!("/api/v1/pop/queue/group/partition/{p}?batch=10"))
            .await;
        let ids: Vec<&str> = popped
            .iter()
            .map(|m| m["transactionId"].as_str().unwrap())
            .collect();
        assert!(ids.contains(&format!("{p}-1").as_str()), "{p}: {ids:?}");
    }
}

/// A combined transaction that fails is retried request by request: the push that cannot
/// be stored (here, one creating a partition past the tenant's limit) is refused alone,
/// and the push that waited beside it in the same batch is stored.
#[actix_rt::test]
async fn a_push_refused_inside_a_combined_batch_is_refused_alone() {
    // Arrange: one writer, blocked by the test's lock on partition a; at most two
    // partitions per queue, and a and b exist.
    let b = TestBroker::start_with(&[
        ("QUEEN_PUSH_WRITERS", "1"),
        ("QUEEN_PUSH_COMBINE_WINDOW_US", "0"),
        ("QUEEN_TENANT_MAX_PARTITIONS_PER_QUEUE", "2"),
    ])
    .await;
    b.push("limited", "a", &[json!(0)]).await;
    b.push("limited", "b", &[json!(0)]).await;
    let mut locker = b.sql().await;
    let watcher = b.sql().await;
    let lock = lock_partition(&mut locker, "limited", "a").await;
    let first = send(&b, one_push("limited", "a", "a-1"));
    until_lock_waiters(&watcher, 1).await;

    // Act: a push to b and one that would create a third partition wait for the writer
    // together, and are taken into one batch once a is released.
    let to_b = send(&b, one_push("limited", "b", "b-1"));
    let to_c = send(&b, one_push("limited", "c", "c-1"));
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    lock.rollback().await.unwrap();

    // Assert
    assert_eq!(first.await.unwrap(), StatusCode::CREATED);
    assert_eq!(to_c.await.unwrap(), StatusCode::FORBIDDEN);
    assert_eq!(
        to_b.await.unwrap(),
        StatusCode::CREATED,
        "the push to b failed with the push beside it"
    );
    let popped = b
        .pop_messages("/api/v1/pop/queue/limited/partition/b?batch=10")
        .await;
    let ids: Vec<&str> = popped
        .iter()
        .filter_map(|m| m["transactionId"].as_str())
        .collect();
    assert!(ids.contains(&"b-1"), "{ids:?}");
}
