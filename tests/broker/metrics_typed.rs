//! `/metrics/prometheus` as typed families from a real broker: counters, gauges from the
//! database (group lag, dead letters) and the latency histograms fed by real requests.

use std::time::Duration;

use serde_json::json;

use crate::support::{eventually, TestBroker};

async fn scrape(b: &TestBroker) -> String {
    let (status, body) = b.get("/metrics/prometheus").await;
    assert!(status.is_success(), "{status}");
    body.as_str().expect("text").to_owned()
}

/// The value of the first sample line starting with `prefix` (name and labels).
fn sample(text: &str, prefix: &str) -> Option<f64> {
    let line = text.lines().find(|l| l.starts_with(prefix))?;
    line.rsplit(' ').next()?.parse().ok()
}

/// Push, pop, ack and a dead letter show up typed: histograms count the requests, the group
/// lag and the dead letters are gauges with the API's numbers, the pop counters are counters.
#[actix_rt::test]
async fn a_scrape_has_typed_counters_gauges_and_request_histograms() {
    let b = TestBroker::start().await;
    let before = scrape(&b).await;
    let pushes_before = sample(&before, "queen_push_duration_seconds_count").unwrap_or(0.0);
    b.push("typed", "p", &[json!(1), json!(2), json!(3)]).await;
    let got = b
        .pop_messages("/api/v1/pop/queue/typed?batch=1&consumerGroup=audit")
        .await;
    let (_, verdict) = b
        .post(
            "/api/v1/ack",
            &json!({
        "transactionId": got[0]["transactionId"], "partitionId": got[0]["partitionId"],
        "leaseId": got[0]["leaseId"], "status": "dlq", "error": "bad", "consumerGroup": "audit"}),
        )
        .await;
    assert_eq!(verdict[0]["success"], true, "{verdict}");

    let text = scrape(&b).await;

    assert!(
        text.contains("# TYPE queen_push_duration_seconds histogram\n"),
        "{text}"
    );
    assert!(sample(&text, "queen_push_duration_seconds_count").unwrap_or(0.0) > pushes_before);
    assert!(sample(&text, "queen_pop_duration_seconds_count").unwrap_or(0.0) >= 1.0);
    assert!(sample(&text, "queen_ack_duration_seconds_count").unwrap_or(0.0) >= 1.0);
    assert!(sample(&text, "queen_pool_wait_seconds_count").unwrap_or(0.0) >= 1.0);
    let route = r#"queen_http_request_duration_seconds_count{method="POST",route="/api/v1/push"}"#;
    assert!(sample(&text, route).unwrap_or(0.0) >= 1.0, "{text}");
    assert!(text.contains("# TYPE queen_pops_total counter\n"), "{text}");
    assert_eq!(
        sample(
            &text,
            r#"queen_consumer_group_lag_messages{group="audit",queue="typed"}"#
        ),
        Some(2.0),
        "{text}"
    );
    assert_eq!(sample(&text, "queen_dead_letters "), Some(1.0), "{text}");
    assert_eq!(sample(&text, "queen_ready "), Some(1.0));
    assert!(!text.contains("untyped"));
}

/// A long-poll woken by a push is counted in the wake histogram under `push`.
#[actix_rt::test]
async fn a_long_poll_woken_by_a_push_is_observed_in_the_wake_histogram() {
    let b = TestBroker::start().await;
    let key = r#"queen_wake_wait_seconds_count{source="push"}"#;
    let before = sample(&scrape(&b).await, key).unwrap_or(0.0);
    b.push("wake-hist", "p", &[json!(0)]).await;
    let first = b
        .pop_messages("/api/v1/pop/queue/wake-hist?autoAck=true")
        .await;
    assert_eq!(first.len(), 1);
    let url = b.url("/api/v1/pop/queue/wake-hist?wait=true&timeout=20000&autoAck=true");
    let parked = tokio::spawn(b.http.get(url).send());
    // The pop is parked once the broker counts it.
    let seen = eventually(Duration::from_secs(10), || async {
        let (_, m) = b.get("/metrics").await;
        (m["pops"]["parked"].as_i64() >= Some(1)).then_some(())
    })
    .await;
    assert!(seen.is_some(), "the long-poll never parked");

    b.push("wake-hist", "p", &[json!(1)]).await;

    let answer = parked.await.expect("join").expect("answer");
    assert_eq!(answer.status(), 200);
    let after = sample(&scrape(&b).await, key).unwrap_or(0.0);
    assert!(after > before, "{before} -> {after}");
}

/// The read views, the key/value route and the locks route are counted like every route: their requests land in the request
/// histogram under their own route label. The histogram is the test process's, shared with
/// the tests running beside this one, so the counts are compared before and after.
#[actix_rt::test]
async fn fetch_partitions_changed_kv_and_locks_are_observed_under_their_own_route_labels() {
    let b = TestBroker::start().await;
    b.push("mt-reads", "p", &[json!(1)]).await;
    let line = |route: &str| {
        format!(r#"queen_http_request_duration_seconds_count{{method="POST",route="{route}"}}"#)
    };
    let routes = [
        "/api/v1/fetch",
        "/api/v1/partitions/changed",
        "/api/v1/kv",
        "/api/v1/locks",
    ];
    let text = scrape(&b).await;
    let before: Vec<f64> = routes
        .iter()
        .map(|route| sample(&text, &line(route)).unwrap_or(0.0))
        .collect();

    let (fetched, _) = b
        .post(
            "/api/v1/fetch",
            &json!({"entries": [{"queue": "mt-reads", "partition": "p", "offset": 0}]}),
        )
        .await;
    let (listed, _) = b
        .post(
            "/api/v1/partitions/changed",
            &json!({"entries": [{"queue": "mt-reads"}]}),
        )
        .await;

    let (kv, _) = b
        .post(
            "/api/v1/kv",
            &json!({"operations": [{"op": "get", "ns": "mt", "key": "k"}]}),
        )
        .await;

    let (locks, _) = b
        .post(
            "/api/v1/locks",
            &json!({"operations": [{"op": "get", "name": "mt"}]}),
        )
        .await;

    assert!(fetched.is_success() && listed.is_success() && kv.is_success());
    assert!(locks.is_success());
    let text = scrape(&b).await;
    for (route, before) in routes.iter().zip(before) {
        let after = sample(&text, &line(route));
        assert!(
            after.is_some_and(|after| after >= before + 1.0),
            "{route}: {before} -> {after:?}:\n{text}"
        );
    }
    b.stop().await;
}
