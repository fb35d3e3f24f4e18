//! Limits per tenant: queues, partitions per queue, consumer groups (checked where each
//! is created, in the database), and the pop batch and long-poll ceilings. Over a limit is
//! a 403 `tenant_limit` JSON error that stores nothing; each tenant has its own count.

use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::{json, Value};

use super::{stored_queues, HS256};
use crate::support::caller::Caller;
use crate::support::TestBroker;

/// A broker with auth on and the given limits.
async fn broker_with(limits: &[(&str, &str)]) -> TestBroker {
    let mut vars = HS256.to_vec();
    vars.extend_from_slice(limits);
    TestBroker::start_with(&vars).await
}

fn assert_limit(status: StatusCode, body: &Value, setting: &str) {
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    assert_eq!(body["code"], "tenant_limit", "{body}");
    assert!(
        body["error"].as_str().unwrap_or("").contains(setting),
        "{body}"
    );
}

async fn push_one(caller: &Caller, queue: &str, partition: &str) -> (StatusCode, Value) {
    caller
        .post(
            "/api/v1/push",
            &json!({"items": [{"queue": queue, "partition": partition, "payload": {"n": 1}}]}),
        )
        .await
}

/// With `QUEEN_TENANT_MAX_QUEUES=2` a tenant's third queue (by push or by configure) is
/// refused and not created, its existing queues still take pushes, and another tenant
/// has its own two.
#[actix_rt::test]
async fn a_tenant_cannot_own_more_queues_than_its_limit_and_another_tenant_has_its_own() {
    // Arrange
    let b = broker_with(&[("QUEEN_TENANT_MAX_QUEUES", "2")]).await;
    let acme = Caller::admin_of(&b.base, "acme");
    let globex = Caller::admin_of(&b.base, "globex");
    acme.push("q1", "p", &[json!(1)]).await;
    acme.push("q2", "p", &[json!(1)]).await;

    // Act
    let (push_status, push_body) = push_one(&acme, "q3", "p").await;
    let (conf_status, conf_body) = acme
        .post("/api/v1/configure", &json!({"queue": "q3", "options": {}}))
        .await;
    acme.push("q1", "p", &[json!(2)]).await;
    globex.push("q1", "p", &[json!(1)]).await;
    globex.push("q3", "p", &[json!(1)]).await;

    // Assert
    assert_limit(push_status, &push_body, "QUEEN_TENANT_MAX_QUEUES");
    assert_limit(conf_status, &conf_body, "QUEEN_TENANT_MAX_QUEUES");
    let names: Vec<(String, String)> = ["acme/q1", "acme/q2", "globex/q1", "globex/q3"]
        .iter()
        .map(|s| {
            let (t, q) = s.split_once('/').expect("tenant/queue");
            (t.to_owned(), q.to_owned())
        })
        .collect();
    assert_eq!(stored_queues(&b.sql().await).await, names);
    b.stop().await;
}

/// Ten concurrent pushes, each creating a new partition of one queue limited to three
/// partitions: exactly three are stored (every message of each), the other seven are
/// refused and store nothing: concurrent creations never overshoot.
#[actix_rt::test]
async fn concurrent_pushes_creating_partitions_never_overshoot_the_partition_limit() {
    // Arrange
    // Every push commits on its own (no combining writer), so the ten really race.
    let b = broker_with(&[
        ("QUEEN_TENANT_MAX_PARTITIONS_PER_QUEUE", "3"),
        ("QUEEN_PUSH_WRITERS", "0"),
    ])
    .await;
    let acme = Caller::admin_of(&b.base, "acme");

    // Act
    let pushes = (0..10).map(|i| {
        let acme = acme.clone();
        async move {
            let items: Vec<Value> = (0..5)
                .map(
                    |n| json!({"queue": "wide", "partition": format!("p{i}"), "payload": {"n": n}}),
                )
                .collect();
            acme.post("/api/v1/push", &json!({ "items": items })).await
        }
    });
    let answers = futures_util::future::join_all(pushes).await;

    // Assert
    let (stored, refused): (Vec<_>, Vec<_>) =
        answers.iter().partition(|(status, _)| status.is_success());
    assert_eq!(stored.len(), 3, "{answers:?}");
    for (status, body) in &refused {
        assert_limit(*status, body, "QUEEN_TENANT_MAX_PARTITIONS_PER_QUEUE");
    }
    let sql = b.sql().await;
    let row = sql
        .query_one(
            "SELECT count(*), coalesce(sum(p.last_offset + 1), 0)::bigint
             FROM queen.log_partitions p JOIN queen.queues q ON q.id = p.queue_id
             WHERE q.tenant = 'acme' AND q.name = 'wide'",
            &[],
        )
        .await
        .expect("count partitions");
    assert_eq!((row.get::<_, i64>(0), row.get::<_, i64>(1)), (3, 15));
    let messages = acme
        .pop("/api/v1/pop/queue/wide?batch=100&partitions=10")
        .await;
    assert_eq!(messages.len(), 15);
    b.stop().await;
}

/// A push that reaches an existing partition and one partition too many is refused as a
/// whole: the existing partition gets nothing either. The `Default` partition stays
/// allowed at the limit.
#[actix_rt::test]
async fn a_push_over_the_partition_limit_stores_nothing_at_all() {
    let b = broker_with(&[("QUEEN_TENANT_MAX_PARTITIONS_PER_QUEUE", "1")]).await;
    let acme = Caller::admin_of(&b.base, "acme");
    acme.push("q", "first", &[json!(1)]).await;
    let (status, body) = acme
        .post(
            "/api/v1/push",
            &json!({"items": [
                {"queue": "q", "partition": "first", "payload": {"n": 2}},
                {"queue": "q", "partition": "second", "payload": {"n": 3}},
            ]}),
        )
        .await;
    assert_limit(status, &body, "QUEEN_TENANT_MAX_PARTITIONS_PER_QUEUE");
    let messages = acme.pop("/api/v1/pop/queue/q?batch=10&partitions=5").await;
    assert_eq!(messages.len(), 1, "{messages:?}");
    assert_eq!(messages[0]["data"], 1);
    // The Default partition is always allowed: configure (which creates it) and a push
    // naming no partition still work at the limit.
    let (status, body) = acme
        .post(
            "/api/v1/configure",
            &json!({"queue": "q", "options": {"leaseTime": 30}}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (status, body) = acme
        .post(
            "/api/v1/push",
            &json!({"items": [{"queue": "q", "payload": {"n": 4}}]}),
        )
        .await;
    assert!(status.is_success(), "{body}");
    b.stop().await;
}

/// With `QUEEN_TENANT_MAX_CONSUMER_GROUPS=2` a tenant's third group is refused at its
/// first pop and leaves no cursor; the two groups (on any queue) and queue mode go on.
#[actix_rt::test]
async fn a_tenant_cannot_read_with_more_consumer_groups_than_its_limit() {
    // Arrange
    let b = broker_with(&[("QUEEN_TENANT_MAX_CONSUMER_GROUPS", "2")]).await;
    let acme = Caller::admin_of(&b.base, "acme");
    acme.push("q", "p", &[json!(1)]).await;
    acme.push("other", "p", &[json!(1)]).await;
    let group_pop = |queue: &str, group: &str| {
        format!("/api/v1/pop/queue/{queue}?consumerGroup={group}&autoAck=true")
    };
    assert_eq!(acme.pop(&group_pop("q", "g1")).await.len(), 1);
    assert_eq!(acme.pop(&group_pop("q", "g2")).await.len(), 1);

    // Act
    let (status, body) = acme.get(&group_pop("q", "g3")).await;
    let g1_elsewhere = acme.pop(&group_pop("other", "g1")).await;
    let queue_mode = acme.pop("/api/v1/pop/queue/q?autoAck=true").await;

    // Assert
    assert_limit(status, &body, "QUEEN_TENANT_MAX_CONSUMER_GROUPS");
    assert_eq!(g1_elsewhere.len(), 1, "a known group reads another queue");
    assert_eq!(queue_mode.len(), 1, "queue mode is not a group");
    let g3 = b
        .sql()
        .await
        .query_one(
            "SELECT count(*) FROM queen.log_consumers WHERE consumer_group = 'g3'",
            &[],
        )
        .await
        .expect("count cursors");
    assert_eq!(g3.get::<_, i64>(0), 0);
    b.stop().await;
}

/// The consumer-group limit holds on every path that creates a group's cursor, not only a
/// group's first pop of a whole queue: with `QUEEN_TENANT_MAX_CONSUMER_GROUPS=1` a second
/// group's pop of a named partition and an operator's seek of it are refused and leave no
/// cursor, while the known group's first pop of a partition created after it registered
/// is served.
#[actix_rt::test]
async fn the_group_limit_holds_for_named_partition_pops_and_seeks_too() {
    // Arrange
    let b = broker_with(&[("QUEEN_TENANT_MAX_CONSUMER_GROUPS", "1")]).await;
    let acme = Caller::admin_of(&b.base, "acme");
    acme.push("q", "p", &[json!(1)]).await;
    assert_eq!(
        acme.pop("/api/v1/pop/queue/q?consumerGroup=g1&autoAck=true")
            .await
            .len(),
        1
    );
    acme.push("q", "late", &[json!(2)]).await;

    // Act
    let (named_status, named_body) = acme
        .get("/api/v1/pop/queue/q/partition/p?consumerGroup=g2&autoAck=true")
        .await;
    let (seek_status, seek_body) = acme
        .post(
            "/api/v1/consumer-groups/g2/queues/q/seek",
            &json!({ "toEnd": true }),
        )
        .await;
    let known = acme
        .pop("/api/v1/pop/queue/q/partition/late?consumerGroup=g1&autoAck=true")
        .await;

    // Assert
    assert_limit(
        named_status,
        &named_body,
        "QUEEN_TENANT_MAX_CONSUMER_GROUPS",
    );
    assert_limit(seek_status, &seek_body, "QUEEN_TENANT_MAX_CONSUMER_GROUPS");
    assert_eq!(
        known.len(),
        1,
        "a known group's new partition is nothing new"
    );
    let g2 = b
        .sql()
        .await
        .query_one(
            "SELECT count(*) FROM queen.log_consumers WHERE consumer_group = 'g2'",
            &[],
        )
        .await
        .expect("count cursors");
    assert_eq!(g2.get::<_, i64>(0), 0);
    b.stop().await;
}

/// `QUEEN_TENANT_MAX_POP_BATCH` and `QUEEN_TENANT_MAX_POP_TIMEOUT_MS`: a pop asking for
/// more is refused at once and pops nothing; a pop asking for nothing gets the ceilings as
/// its defaults.
#[actix_rt::test]
async fn pops_over_the_batch_or_timeout_ceiling_are_refused_and_defaults_stay_under_them() {
    // Arrange
    let b = broker_with(&[
        ("QUEEN_TENANT_MAX_POP_BATCH", "10"),
        ("QUEEN_TENANT_MAX_POP_TIMEOUT_MS", "1000"),
    ])
    .await;
    let acme = Caller::admin_of(&b.base, "acme");
    let payloads: Vec<Value> = (0..30).map(|n| json!(n)).collect();
    acme.push("q", "p", &payloads).await;

    // Act + Assert
    let (status, body) = acme.get("/api/v1/pop/queue/q?batch=11").await;
    assert_limit(status, &body, "QUEEN_TENANT_MAX_POP_BATCH");
    let started = Instant::now();
    let (status, body) = acme
        .get("/api/v1/pop/queue/empty?wait=true&timeout=5000")
        .await;
    assert_limit(status, &body, "QUEEN_TENANT_MAX_POP_TIMEOUT_MS");
    assert!(
        started.elapsed() < Duration::from_millis(900),
        "refused at once"
    );
    let first = acme.pop("/api/v1/pop/queue/q?autoAck=true").await;
    assert_eq!(
        first.len(),
        10,
        "the default batch is lowered to the ceiling"
    );
    assert_eq!(first[0]["data"], 0, "the refused pop took nothing");
    let started = Instant::now();
    let none = acme.pop("/api/v1/pop/queue/empty?wait=true").await;
    let waited = started.elapsed();
    assert!(none.is_empty());
    assert!(
        waited >= Duration::from_millis(900) && waited < Duration::from_secs(10),
        "the default long-poll deadline is lowered to 1 s: waited {waited:?}"
    );
    b.stop().await;
}

/// Eight concurrent pushes each creating a queue under a limit of three queues, and six
/// concurrent first pops each starting a group under a limit of two groups: exactly the
/// limit is created each time, the rest are refused and leave nothing behind.
#[actix_rt::test]
async fn concurrent_creations_of_queues_and_groups_never_overshoot_their_limits() {
    // Arrange
    let b = broker_with(&[
        ("QUEEN_TENANT_MAX_QUEUES", "3"),
        ("QUEEN_TENANT_MAX_CONSUMER_GROUPS", "2"),
        ("QUEEN_PUSH_WRITERS", "0"),
    ])
    .await;
    let acme = Caller::admin_of(&b.base, "acme");

    // Act: queues
    let pushes = (0..8).map(|i| {
        let acme = acme.clone();
        async move { push_one(&acme, &format!("q{i}"), "p").await }
    });
    let pushed = futures_util::future::join_all(pushes).await;

    // Assert: queues
    let stored: Vec<_> = pushed.iter().filter(|(s, _)| s.is_success()).collect();
    assert_eq!(stored.len(), 3, "{pushed:?}");
    for (status, body) in pushed.iter().filter(|(s, _)| !s.is_success()) {
        assert_limit(*status, body, "QUEEN_TENANT_MAX_QUEUES");
    }
    assert_eq!(stored_queues(&b.sql().await).await.len(), 3);

    // Act: groups, on one of the stored queues
    let queue = stored_queues(&b.sql().await).await[0].1.clone();
    let pops = (0..6).map(|i| {
        let (acme, queue) = (acme.clone(), queue.clone());
        async move {
            acme.get(&format!(
                "/api/v1/pop/queue/{queue}?consumerGroup=g{i}&autoAck=true"
            ))
            .await
        }
    });
    let popped = futures_util::future::join_all(pops).await;

    // Assert: groups
    let served = popped.iter().filter(|(s, _)| s.is_success()).count();
    assert_eq!(served, 2, "{popped:?}");
    for (status, body) in popped.iter().filter(|(s, _)| !s.is_success()) {
        assert_limit(*status, body, "QUEEN_TENANT_MAX_CONSUMER_GROUPS");
    }
    let groups = b
        .sql()
        .await
        .query_one(
            "SELECT count(DISTINCT consumer_group) FROM queen.log_consumers
             WHERE consumer_group <> '__QUEUE_MODE__'",
            &[],
        )
        .await
        .expect("count groups");
    assert_eq!(groups.get::<_, i64>(0), 2);
    b.stop().await;
}
