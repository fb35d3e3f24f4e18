//! The hot-list ring and its revisit wheel: a partition held by windowBuffer or by a lease
//! comes back on its own, the minimum pop wait fills a batch, a client that goes away
//! mid-pop loses no partition, and the hot-list and legacy paths deliver exactly once under
//! concurrent consumers.

use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::support::{eventually, payloads, TestBroker};
use crate::wakes::{
    configure, count, counter, first_contact, group_stats, metrics, spawn_get, spawn_get_with,
    wait_parked, TIMING,
};

/// A partition under windowBuffer is delivered after the window to a consumer that was
/// already parked, without any new push, and not before the window.
#[actix_rt::test]
async fn a_partition_under_window_buffer_reaches_a_parked_consumer_after_the_window() {
    // Arrange
    let b = TestBroker::start().await;
    configure(&b, "win", json!({ "windowBuffer": 1 })).await;
    first_contact(&b, "win", "__QUEUE_MODE__").await;
    let pop = spawn_get(&b, "/api/v1/pop/queue/win?wait=true&timeout=6000");
    wait_parked(&b, 1).await;
    let wheel_before = counter(&b, "/wakes/wheel").await;

    // Act: one push, then nothing.
    let sent = Instant::now();
    b.push("win", "Default", &[json!("w0"), json!("w1")]).await;
    let answer = pop.await.expect("pop task");
    let took = answer.at.saturating_duration_since(sent);

    // Assert: after the 1 s window, and well before the 5 s reseed could have found it.
    assert_eq!(payloads(&answer.messages()), vec![json!("w0"), json!("w1")]);
    eprintln!("windowBuffer=1 delivery to a parked consumer after {took:?}");
    assert!(
        took >= Duration::from_millis(950),
        "delivered {took:?} after the push, inside the 1 s window"
    );
    assert!(
        took < Duration::from_millis(2000),
        "delivered only {took:?} after the push (window 1 s)"
    );
    let wheel_wakes = counter(&b, "/wakes/wheel").await - wheel_before;
    assert!(wheel_wakes >= 1, "the wheel never woke the parked consumer");
}

/// A leased partition returns to the ring when its lease expires: a parked consumer gets
/// the same messages again (deliveryAttempt 2), woken by the wheel.
#[actix_rt::test]
async fn a_leased_partition_returns_to_the_ring_when_its_lease_expires() {
    // Arrange: the claim goes through the ring (first contact is done before the push).
    let b = TestBroker::start().await;
    configure(&b, "lease-back", json!({})).await;
    first_contact(&b, "lease-back", "__QUEUE_MODE__").await;
    b.push("lease-back", "Default", &[json!("m0"), json!("m1")])
        .await;
    let first = b
        .pop_messages("/api/v1/pop/queue/lease-back?leaseSeconds=1&batch=10")
        .await;
    let leased_at = Instant::now();
    assert_eq!(payloads(&first), vec![json!("m0"), json!("m1")]);
    assert!(first.iter().all(|m| m["deliveryAttempt"] == 1), "{first:?}");
    let wheel_before = counter(&b, "/wakes/wheel").await;

    // Act: never acked; a second consumer parks.
    let answer = spawn_get(
        &b,
        "/api/v1/pop/queue/lease-back?wait=true&timeout=6000&batch=10",
    )
    .await
    .expect("pop task");
    let took = answer.at.saturating_duration_since(leased_at);

    // Assert
    let again = answer.messages();
    assert_eq!(payloads(&again), vec![json!("m0"), json!("m1")]);
    assert!(again.iter().all(|m| m["deliveryAttempt"] == 2), "{again:?}");
    assert_ne!(again[0]["leaseId"], first[0]["leaseId"]);
    eprintln!("redelivered {took:?} after a 1 s lease was taken");
    assert!(
        took < Duration::from_millis(1500),
        "redelivered only {took:?} after a 1 s lease"
    );
    let wheel_wakes = counter(&b, "/wakes/wheel").await - wheel_before;
    assert!(wheel_wakes >= 1, "the wheel never woke the parked consumer");
}

/// Pushes `count` single-message requests to one partition, `every` apart, starting with `first`.
async fn push_one_by_one(b: &TestBroker, queue: &str, first: i64, count: i64, every: Duration) {
    for i in first..first + count {
        b.push(queue, "Default", &[json!(i)]).await;
        // Spacing the pushes is the point of the test, not a wait for something.
        tokio::time::sleep(every).await;
    }
}

/// The minimum pop wait holds an under-full claim until pushes arriving inside the window
/// fill the batch; without it the same sequence answers with fewer messages.
#[actix_rt::test]
async fn min_pop_wait_fills_a_batch_from_pushes_arriving_inside_the_window() {
    // Arrange: one queue with a 600 ms minimum pop wait, one without.
    let b = TestBroker::start().await;
    configure(&b, "minwait", json!({ "minPopWaitTime": 600 })).await;
    configure(&b, "nowait", json!({})).await;
    for q in ["minwait", "nowait"] {
        first_contact(&b, q, "__QUEUE_MODE__").await;
    }
    let mut answers = HashMap::new();

    for q in ["nowait", "minwait"] {
        // Act: one message, a pop for ten, then nine more one by one over ~300 ms.
        b.push(q, "Default", &[json!(0)]).await;
        let holds_before = counter(&b, "/pops/minWaitHolds").await;
        let started = Instant::now();
        let pop = spawn_get(
            &b,
            &format!("/api/v1/pop/queue/{q}?batch=10&wait=true&timeout=3000"),
        );
        if q == "minwait" {
            let held = eventually(Duration::from_secs(2), || async {
                (counter(&b, "/pops/minWaitHolds").await > holds_before).then_some(())
            })
            .await;
            assert!(held.is_some(), "the minimum pop wait never held the pop");
        }
        push_one_by_one(&b, q, 1, 9, Duration::from_millis(30)).await;
        let answer = pop.await.expect("pop task");
        let rest = b
            .pop_messages(&format!("/api/v1/pop/queue/{q}?batch=10"))
            .await;
        answers.insert(q, (answer, started, rest));
    }

    // Assert
    let (with, started, rest) = &answers["minwait"];
    let ten: Vec<Value> = (0..10).map(|i| json!(i)).collect();
    assert_eq!(
        payloads(&with.messages()),
        ten,
        "the held pop did not carry the whole batch"
    );
    assert!(rest.is_empty(), "{rest:?}");
    let took = with.at.saturating_duration_since(*started);
    eprintln!("min pop wait answered with 10 after {took:?}");
    assert!(
        took < Duration::from_millis(1000),
        "the held pop answered only after {took:?} (window 600 ms)"
    );
    let (without, _, _) = &answers["nowait"];
    let got = without.messages().len();
    assert!(
        (1..10).contains(&got),
        "the control queue (no minimum pop wait) answered with {got} messages"
    );
}

/// Pushes `per_partition` messages to each of `partitions` partitions, payload `{"p":..,"i":..}`.
async fn fill(b: &TestBroker, queue: &str, partitions: usize, per_partition: usize) {
    let mut items = Vec::new();
    for i in 0..per_partition {
        for p in 0..partitions {
            items.push(json!({
                "queue": queue,
                "partition": format!("p{p}"),
                "payload": {"p": p, "i": i},
            }));
        }
    }
    for chunk in items.chunks(500) {
        let (status, body) = b.post("/api/v1/push", &json!({ "items": chunk })).await;
        assert!(status.is_success(), "push answered {status}: {body}");
    }
}

/// One consumer: pops and acks until the shared count reaches `total` or the deadline.
async fn consume(
    b: Arc<TestBroker>,
    path: String,
    seen: Arc<AtomicUsize>,
    total: usize,
    deadline: Instant,
) -> Vec<(u64, u64)> {
    let mut got = Vec::new();
    while seen.load(Ordering::SeqCst) < total && Instant::now() < deadline {
        let (status, body) = b.get(&path).await;
        match status {
            StatusCode::NO_CONTENT => continue,
            StatusCode::OK => {}
            other => panic!("pop answered {other}: {body}"),
        }
        let messages = body["messages"].as_array().expect("messages").clone();
        for m in &messages {
            got.push((
                m["data"]["p"].as_u64().expect("p"),
                m["data"]["i"].as_u64().expect("i"),
            ));
        }
        let answers = b.ack_all(&messages, "completed", None).await;
        assert!(
            answers.iter().all(|a| a["success"] == true),
            "an ack was refused: {answers:?}"
        );
        seen.fetch_add(messages.len(), Ordering::SeqCst);
    }
    got
}

/// Drains a filled queue with `consumers` concurrent consumers; returns each one's stream.
async fn drain(
    b: Arc<TestBroker>,
    queue: &str,
    consumers: usize,
    total: usize,
) -> Vec<Vec<(u64, u64)>> {
    let seen = Arc::new(AtomicUsize::new(0));
    let deadline = Instant::now() + Duration::from_secs(60);
    let path = format!("/api/v1/pop/queue/{queue}?batch=20&partitions=2&wait=true&timeout=500");
    let tasks: Vec<_> = (0..consumers)
        .map(|_| {
            tokio::spawn(consume(
                b.clone(),
                path.clone(),
                seen.clone(),
                total,
                deadline,
            ))
        })
        .collect();
    let mut all = Vec::new();
    for t in tasks {
        all.push(t.await.expect("consumer task"));
    }
    assert_eq!(seen.load(Ordering::SeqCst), total, "{queue}: not drained");
    all
}

/// Every message exactly once, and in order within its partition in each consumer's stream.
fn assert_exactly_once_in_order(
    label: &str,
    all: &[Vec<(u64, u64)>],
    partitions: u64,
    per_partition: u64,
) -> BTreeSet<(u64, u64)> {
    let mut per: HashMap<u64, Vec<u64>> = HashMap::new();
    for consumer in all {
        let mut last: HashMap<u64, u64> = HashMap::new();
        for &(p, i) in consumer {
            if let Some(prev) = last.insert(p, i) {
                assert!(
                    i > prev,
                    "{label}: partition {p}: {i} after {prev} in one consumer"
                );
            }
            per.entry(p).or_default().push(i);
        }
    }
    assert_eq!(
        per.len() as u64,
        partitions,
        "{label}: some partition delivered nothing"
    );
    let mut set = BTreeSet::new();
    for (p, mut got) in per {
        got.sort_unstable();
        let want: Vec<u64> = (0..per_partition).collect();
        assert_eq!(got, want, "{label}: partition {p}: lost or duplicated");
        set.extend(got.into_iter().map(|i| (p, i)));
    }
    set
}

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
        drain(hot.clone(), "same", 16, total),
        drain(legacy.clone(), "same", 16, total)
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

/// A client that drops its connection while its pop's claim is blocked in the database
/// loses no partition: the lent candidate goes back to the group, and a new consumer gets
/// the message.
#[actix_rt::test]
async fn a_client_dropping_its_connection_mid_pop_loses_no_partition_from_the_ring() {
    // Arrange: no periodic reseed, so only the ring can bring the partition back.
    let b = TestBroker::start_with(&[("QUEEN_HOTLIST_RESEED_MS", "600000")]).await;
    configure(&b, "dropped", json!({})).await;
    first_contact(&b, "dropped", "__QUEUE_MODE__").await;
    b.push("dropped", "Default", &[json!("kept")]).await;
    let tracked = |m: &Value| {
        let g = group_stats(m, "dropped", "__QUEUE_MODE__").expect("the group actor is alive");
        (
            g["ring"].as_u64().unwrap(),
            g["wheel"].as_u64().unwrap(),
            g["lent"].as_u64().unwrap(),
        )
    };
    assert_eq!(
        tracked(&metrics(&b).await),
        (1, 0, 0),
        "the push is in the ring"
    );
    let mut locker = b.sql().await;
    let lock = locker.transaction().await.unwrap();
    lock.batch_execute("LOCK TABLE queen.log_segments IN ACCESS EXCLUSIVE MODE")
        .await
        .unwrap();
    let impatient = reqwest::Client::builder()
        .timeout(Duration::from_millis(1000))
        .build()
        .unwrap();

    // Act: the pop's claim waits on the lock; the client gives up and closes.
    let url = b.url("/api/v1/pop/queue/dropped?leaseSeconds=1&batch=10");
    let gave_up = tokio::spawn(async move { impatient.get(&url).send().await });
    let watcher = b.sql().await;
    let blocked = eventually(Duration::from_secs(3), || async {
        let waiting: i64 = watcher
            .query_one(
                "SELECT count(*) FROM pg_stat_activity \
                 WHERE datname = current_database() AND wait_event_type = 'Lock'",
                &[],
            )
            .await
            .unwrap()
            .get(0);
        (waiting >= 1).then_some(())
    })
    .await;
    assert!(
        blocked.is_some(),
        "the pop's claim never waited on the lock"
    );
    let mid = tracked(&metrics(&b).await);
    let outcome = gave_up.await.expect("client task");
    assert!(
        outcome.is_err(),
        "the client should have timed out: {outcome:?}"
    );
    let after_drop = tracked(&metrics(&b).await);
    lock.commit().await.unwrap();

    // Assert. Either way the partition must stay tracked: if the server drops the pop's
    // future when the client leaves, the drop guard hands the lent partition back; if it
    // keeps running it (actix-web does, see `after_drop`), the claim commits once the lock
    // goes and its lease brings the partition back through the wheel. The guard alone is
    // pinned by `a_pop_whose_claim_fails_mid_flight_loses_no_partition_from_the_ring`.
    eprintln!("(ring, wheel, lent): mid-claim {mid:?}, client gone {after_drop:?}");
    assert_eq!(mid.2, 1, "the blocked pop holds the partition as lent");
    let settled = eventually(Duration::from_secs(3), || async {
        let (ring, wheel, lent) = tracked(&metrics(&b).await);
        (lent == 0 && ring + wheel == 1).then_some((ring, wheel, lent))
    })
    .await;
    assert!(
        settled.is_some(),
        "the partition left the ring: (ring, wheel, lent) = {:?}",
        tracked(&metrics(&b).await)
    );
    let started = Instant::now();
    let answer = spawn_get_with(
        b.http.clone(),
        b.url("/api/v1/pop/queue/dropped?wait=true&timeout=5000&batch=10"),
    )
    .await
    .expect("pop task");
    assert_eq!(payloads(&answer.messages()), vec![json!("kept")]);
    let took = answer.at.saturating_duration_since(started);
    assert!(
        took < Duration::from_millis(2500),
        "redelivered only after {took:?} (lease 1 s + backoff 1 s)"
    );
}

/// A pop whose claim fails in the database (here a statement timeout while the claim waits
/// on a lock) hands its lent candidates back: the partition stays in the ring and the next
/// consumer gets the message. This is the drop guard's deterministic path (the same one a
/// cancelled pop takes).
#[actix_rt::test]
async fn a_pop_whose_claim_fails_mid_flight_loses_no_partition_from_the_ring() {
    // Arrange: no periodic reseed, so only the ring can bring the partition back.
    let b = TestBroker::start_with(&[
        ("QUEEN_HOTLIST_RESEED_MS", "600000"),
        ("QUEEN_STATEMENT_TIMEOUT_MS", "500"),
    ])
    .await;
    configure(&b, "failed-claim", json!({})).await;
    first_contact(&b, "failed-claim", "__QUEUE_MODE__").await;
    b.push("failed-claim", "Default", &[json!("kept")]).await;
    let tracked = |m: &Value| {
        let g = group_stats(m, "failed-claim", "__QUEUE_MODE__").expect("the group actor is alive");
        (
            g["ring"].as_u64().unwrap(),
            g["wheel"].as_u64().unwrap(),
            g["lent"].as_u64().unwrap(),
        )
    };
    assert_eq!(
        tracked(&metrics(&b).await),
        (1, 0, 0),
        "the push is in the ring"
    );
    let mut locker = b.sql().await;
    let lock = locker.transaction().await.unwrap();
    lock.batch_execute("LOCK TABLE queen.log_segments IN ACCESS EXCLUSIVE MODE")
        .await
        .unwrap();

    // Act: the claim waits on the lock until the statement timeout cancels it.
    let (status, body) = b
        .get("/api/v1/pop/queue/failed-claim?leaseSeconds=1&batch=10")
        .await;
    let while_locked = eventually(Duration::from_secs(3), || async {
        let t = tracked(&metrics(&b).await);
        (t == (1, 0, 0)).then_some(t)
    })
    .await;
    lock.rollback().await.unwrap();
    let answer = spawn_get(
        &b,
        "/api/v1/pop/queue/failed-claim?wait=true&timeout=3000&batch=10",
    )
    .await
    .expect("pop task");

    // Assert
    assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR, "{body}");
    assert!(
        body["error"]
            .as_str()
            .unwrap_or_default()
            .contains("timeout"),
        "{body}"
    );
    assert!(
        while_locked.is_some(),
        "the failed pop did not hand its partition back: (ring, wheel, lent) = {:?}",
        tracked(&metrics(&b).await)
    );
    let again = answer.messages();
    assert_eq!(payloads(&again), vec![json!("kept")]);
    assert_eq!(
        again[0]["deliveryAttempt"], 1,
        "the failed claim took a lease"
    );
}
