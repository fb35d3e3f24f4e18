//! Status, analytics and the per-queue Prometheus gauges (contract §4.5, §4.6) over real
//! pushes, pops and acks.

use reqwest::StatusCode;
use serde_json::json;

use crate::support::fixtures::numbers;
use crate::support::TestBroker;

/// Queue `st-a`: 4 messages pushed, 1 consumed and acked in queue mode.
async fn arrange(b: &TestBroker) {
    b.push("st-a", "Default", &numbers(0..4)).await;
    let got = b.pop_messages("/api/v1/pop/queue/st-a?batch=1").await;
    b.ack_all(&got, "completed", None).await;
}

/// The status totals and the per-queue status count what was pushed in the window.
#[actix_rt::test]
async fn status_counts_messages_and_what_was_pushed_in_the_window() {
    // Arrange
    let b = TestBroker::start().await;
    arrange(&b).await;

    // Act
    let (status, totals) = b.get("/api/v1/status").await;
    let (_, queues) = b.get("/api/v1/status/queues").await;
    let (_, one) = b.get("/api/v1/status/queues/st-a").await;
    let (missing, _) = b.get("/api/v1/status/queues/nope").await;
    let (_, old) = b
        .get("/api/v1/status?from=2000-01-01T00%3A00%3A00Z&to=2000-01-02T00%3A00%3A00Z")
        .await;
    let (bad, _) = b.get("/api/v1/status?from=whenever").await;

    // Assert
    assert_eq!(status, StatusCode::OK, "{totals}");
    assert_eq!(totals["queues"], 1, "{totals}");
    assert_eq!(totals["pushed"], 4, "{totals}");
    assert_eq!(
        totals["messages"],
        json!({"total": 4, "pending": 3, "processing": 0, "completed": 1, "deadLetter": 0})
    );
    assert_eq!(queues["total"], 1, "{queues}");
    assert_eq!(queues["queues"][0]["name"], "st-a");
    assert_eq!(queues["queues"][0]["pushed"], 4);
    assert_eq!(one["partitions"][0]["messages"]["pending"], 3, "{one}");
    assert!(one["lagSeconds"].as_f64().unwrap() >= 0.0, "{one}");
    assert_eq!(missing, StatusCode::NOT_FOUND);
    assert_eq!(old["pushed"], 0, "{old}");
    assert_eq!(bad, StatusCode::BAD_REQUEST);
}

/// Analytics buckets count pushed messages; the metrics endpoints describe this process.
#[actix_rt::test]
async fn analytics_buckets_count_pushes_and_the_process_metrics_are_served() {
    // Arrange
    let b = TestBroker::start().await;
    arrange(&b).await;

    // Act
    let (status, analytics) = b.get("/api/v1/status/analytics?interval=day").await;
    let (bad, _) = b.get("/api/v1/status/analytics?interval=fortnight").await;
    let (system, system_body) = b.get("/api/v1/analytics/system-metrics").await;
    let (workers, workers_body) = b.get("/api/v1/analytics/worker-metrics").await;
    let (refresh, refresh_body) = b
        .post_raw("/api/v1/stats/refresh", "application/json", Vec::new())
        .await;

    // Assert
    assert_eq!(status, StatusCode::OK, "{analytics}");
    assert_eq!(analytics["interval"], "day");
    let pushed: i64 = analytics["buckets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["pushed"].as_i64().unwrap())
        .sum();
    assert_eq!(pushed, 4, "{analytics}");
    assert_eq!(bad, StatusCode::BAD_REQUEST);
    assert_eq!(system, StatusCode::OK);
    assert!(system_body["metrics"]["pool"].is_object(), "{system_body}");
    assert_eq!(workers, StatusCode::OK);
    assert!(workers_body["workers"].is_array(), "{workers_body}");
    assert_eq!(refresh, StatusCode::OK);
    assert_eq!(refresh_body["success"], true);
}

/// The Prometheus text carries each queue's depth, lag and last-minute throughput.
#[actix_rt::test]
async fn prometheus_text_carries_per_queue_depth_lag_and_throughput() {
    // Arrange
    let b = TestBroker::start().await;
    arrange(&b).await;
    b.push("st-empty", "Default", &numbers(0..1)).await;
    let got = b.pop_messages("/api/v1/pop/queue/st-empty").await;
    b.ack_all(&got, "completed", None).await;

    // Act
    let text = b
        .http
        .get(b.url("/metrics/prometheus"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();

    // Assert
    assert!(
        text.contains("queen_queue_depth{queue=\"st-a\"} 3\n"),
        "{text}"
    );
    assert!(
        text.contains("queen_queue_depth{queue=\"st-empty\"} 0\n"),
        "{text}"
    );
    assert!(
        text.contains("queen_queue_throughput{queue=\"st-a\"} 4\n"),
        "{text}"
    );
    assert!(
        text.contains("queen_queue_lag_seconds{queue=\"st-empty\"} 0\n"),
        "{text}"
    );
    assert!(text.contains("# TYPE queen_queue_depth gauge\n"), "{text}");
    let lag_line = text
        .lines()
        .find(|l| l.starts_with("queen_queue_lag_seconds{queue=\"st-a\"}"))
        .unwrap_or_else(|| panic!("{text}"));
    let lag: f64 = lag_line.rsplit(' ').next().unwrap().parse().unwrap();
    assert!((0.0..60.0).contains(&lag), "{lag_line}");
    assert!(
        text.contains("queen_pool_size "),
        "the counters are still there"
    );
}
