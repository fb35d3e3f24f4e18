//! Refusals and failures as clients see them: maintenance mode on every node of a database,
//! an exhausted pool and a statement timeout.

use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::support::fixtures::counter;
use crate::support::lock_waiters::lock_waiter_within;
use crate::support::{eventually, payloads, postgres, TestBroker};

/// Sets pop maintenance mode through one node.
async fn set_maintenance(b: &TestBroker, on: bool) {
    let (status, body) = b
        .post("/api/v1/system/maintenance", &json!({ "pop": on }))
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["pop"], on, "{body}");
}

/// Pop maintenance mode as a node sees it.
async fn maintenance_on(b: &TestBroker) -> bool {
    let (status, body) = b.get("/api/v1/system/maintenance").await;
    assert_eq!(status, StatusCode::OK, "{body}");
    body["pop"].as_bool().expect("pop is a boolean")
}

/// A waiting pop in maintenance answers 204 at once, even though messages exist.
async fn assert_refused_at_once(b: &TestBroker, group: &str) {
    let started = Instant::now();
    let (status, body) = b
        .get(&format!(
            "/api/v1/pop/queue/maint?consumerGroup={group}&wait=true&timeout=3000"
        ))
        .await;
    let took = started.elapsed();
    assert_eq!(status, StatusCode::NO_CONTENT, "{body}");
    assert_eq!(body, Value::Null);
    assert!(
        took < Duration::from_millis(500),
        "a pop in maintenance answered after {took:?}, not at once"
    );
}

/// Maintenance mode answers 204 while messages exist, on both nodes of one database, and
/// ends: pops deliver again once it is switched off.
#[actix_rt::test]
async fn maintenance_mode_answers_204_on_every_node_and_ends() {
    // Arrange
    let a = TestBroker::start().await;
    let b = TestBroker::start_on(a.pg.clone(), &[]).await;
    a.push("maint", "Default", &[json!("m0"), json!("m1")])
        .await;

    // Act 1
    set_maintenance(&a, true).await;
    let switched = Instant::now();
    let seen_by_b = eventually(Duration::from_secs(3), || async {
        maintenance_on(&b).await.then(|| switched.elapsed())
    })
    .await;

    // Assert 1
    assert!(maintenance_on(&a).await);
    assert_refused_at_once(&a, "ga").await;
    let seen_by_b = seen_by_b.expect("node B never saw maintenance mode");
    eprintln!("node B saw maintenance mode after {seen_by_b:?}");
    assert!(
        seen_by_b < Duration::from_millis(1200),
        "node B saw maintenance mode only after {seen_by_b:?}"
    );
    assert_refused_at_once(&b, "gb").await;
    assert!(counter(&a, "/pops/maintenance").await >= 1);
    assert!(counter(&b, "/pops/maintenance").await >= 1);

    // Act 2
    set_maintenance(&a, false).await;
    let b_off = eventually(Duration::from_secs(3), || async {
        (!maintenance_on(&b).await).then_some(())
    })
    .await;

    // Assert 2
    assert!(b_off.is_some(), "node B never left maintenance mode");
    let from_a = a
        .pop_messages("/api/v1/pop/queue/maint?consumerGroup=ga&batch=10")
        .await;
    assert_eq!(payloads(&from_a), vec![json!("m0"), json!("m1")]);
    let from_b = b
        .pop_messages("/api/v1/pop/queue/maint?consumerGroup=gb&batch=10")
        .await;
    assert_eq!(payloads(&from_b), vec![json!("m0"), json!("m1")]);
}

/// Blocks pushes to a partition (which must exist) from a direct SQL transaction: its
/// row, locked by id. On the Citus layout `log_partitions` is distributed by id, and Citus
/// refuses a `FOR UPDATE` without the distribution column ("could not run distributed
/// query with FOR UPDATE/SHARE commands"); by id it locks the row on its worker, in the
/// worker's transaction that this one opened there.
async fn lock_partition(b: &TestBroker, name: &str) -> tokio_postgres::Client {
    let client = b.sql().await;
    let id: i64 = client
        .query_one(
            "SELECT id FROM queen.log_partitions WHERE name = $1",
            &[&name],
        )
        .await
        .unwrap()
        .get(0);
    client.batch_execute("BEGIN").await.unwrap();
    client
        .execute(
            "SELECT 1 FROM queen.log_partitions WHERE id = $1 FOR UPDATE",
            &[&id],
        )
        .await
        .unwrap();
    client
}

/// Waits until the blocked push waits on the partition's row lock.
async fn wait_for_lock_waiter(b: &TestBroker) {
    assert!(
        lock_waiter_within(b, Duration::from_secs(5)).await,
        "the push never waited on the row lock"
    );
}

/// An exhausted pool answers 500 `{"error":"pool"}`, for a push and for a pop.
#[actix_rt::test]
async fn an_exhausted_pool_answers_500_pool() {
    // Arrange: one connection, held by a push blocked on the partition's row lock.
    let b =
        TestBroker::start_with(&[("DB_POOL_SIZE", "1"), ("QUEEN_POOL_TIMEOUT_MS", "300")]).await;
    // The one connection is opened on first use, which on a loaded Citus cluster can take
    // longer than the 300 ms pool timeout (CI's Citus sub-run saw this push answer "pool"):
    // the setup push is sent again until it lands.
    let landed = eventually(Duration::from_secs(10), || async {
        let first =
            json!({ "items": [{ "queue": "exhaust", "partition": "p", "payload": "first" }] });
        let (status, _) = b.post("/api/v1/push", &first).await;
        status.is_success().then_some(())
    })
    .await;
    assert!(landed.is_some(), "the setup push never landed");
    let locker = lock_partition(&b, "p").await;
    let blocked = {
        let (http, url) = (b.http.clone(), b.url("/api/v1/push"));
        let body =
            json!({ "items": [{ "queue": "exhaust", "partition": "p", "payload": "blocked" }] });
        tokio::spawn(async move { http.post(&url).json(&body).send().await })
    };
    wait_for_lock_waiter(&b).await;

    // Act
    let (push_status, push_body) = b
        .post(
            "/api/v1/push",
            &json!({ "items": [{ "queue": "exhaust", "partition": "other", "payload": 1 }] }),
        )
        .await;
    let (pop_status, pop_body) = b.get("/api/v1/pop/queue/exhaust").await;
    locker.batch_execute("COMMIT").await.unwrap();
    let first = blocked.await.expect("push task").expect("push answered");

    // Assert
    assert_eq!(
        push_status,
        StatusCode::INTERNAL_SERVER_ERROR,
        "{push_body}"
    );
    assert_eq!(push_body, json!({ "error": "pool" }));
    assert_eq!(pop_status, StatusCode::INTERNAL_SERVER_ERROR, "{pop_body}");
    assert_eq!(pop_body, json!({ "error": "pool" }));
    assert!(
        first.status().is_success(),
        "the blocked push failed once the lock went: {}",
        first.status()
    );
}

/// A statement timeout answers 500 with "timeout" in the error, and the connection that
/// ran it is dropped from the pool.
#[actix_rt::test]
async fn a_statement_timeout_answers_500_and_quarantines_the_connection() {
    // Arrange: the schema installed first (on the Citus layout its conversion of the
    // tables takes longer than the 300 ms timeout).
    let pg = postgres::fresh_installed_database().await;
    let b = TestBroker::start_on(pg, &[("QUEEN_STATEMENT_TIMEOUT_MS", "300")]).await;
    b.push("slow", "p", &[json!("first")]).await;
    let quarantined_before = counter(&b, "/pool/quarantined").await;
    let locker = lock_partition(&b, "p").await;

    // Act
    let started = Instant::now();
    let (status, body) = b
        .post(
            "/api/v1/push",
            &json!({ "items": [{ "queue": "slow", "partition": "p", "payload": "late" }] }),
        )
        .await;
    let took = started.elapsed();
    locker.batch_execute("ROLLBACK").await.unwrap();

    // Assert
    assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR, "{body}");
    let error = body["error"].as_str().unwrap_or_default();
    assert!(error.contains("timeout"), "{body}");
    assert!(
        took < Duration::from_secs(3),
        "the timeout took {took:?} (statement timeout 300 ms)"
    );
    let quarantined = eventually(Duration::from_secs(2), || async {
        let q = counter(&b, "/pool/quarantined").await;
        (q > quarantined_before).then_some(q)
    })
    .await;
    assert!(
        quarantined.is_some(),
        "the timed-out connection went back to the pool"
    );
    // The pool recovers: the same push works once the lock is gone. Each step is asked
    // again while it answers the 300 ms limit's own timeout: on a loaded machine a
    // statement can outlast it without any lock in its way.
    let after = json!({ "items": [{ "queue": "slow", "partition": "p", "payload": "after" }] });
    let pushed = past_timeouts(|| b.post("/api/v1/push", &after)).await;
    assert!(pushed.0.is_success(), "{} {}", pushed.0, pushed.1);
    assert_eq!(pushed.1[0]["status"], "queued", "{}", pushed.1);
    let (status, body) = past_timeouts(|| b.get("/api/v1/pop/queue/slow?batch=10")).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let got = body["messages"].as_array().expect("messages array");
    assert_eq!(payloads(got), vec![json!("first"), json!("after")]);
}

/// Sends a request again (up to ten times) while it answers 500 with "timeout" in the
/// error; returns the first other answer, or the last timeout.
async fn past_timeouts<F, Fut>(mut send: F) -> (StatusCode, Value)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = (StatusCode, Value)>,
{
    let mut answer = send().await;
    for _ in 0..9 {
        let timed_out = answer.0 == StatusCode::INTERNAL_SERVER_ERROR
            && answer.1["error"]
                .as_str()
                .is_some_and(|e| e.contains("timeout"));
        if !timed_out {
            break;
        }
        answer = send().await;
    }
    answer
}
