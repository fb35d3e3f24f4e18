//! The broker-wide cap (`QUEEN_EPHEMERAL_MAX_BYTES`): a flood over many queues never holds
//! more than the cap (a `reject` queue is refused 429 `broker_full`, a `dropOldest` one
//! drops its oldest), and the process's resident memory stays within the cap plus a fixed
//! overhead.

use reqwest::StatusCode;
use serde_json::{json, Value};

use super::{configure, push};
use crate::nodes::cluster::{Options, TestCluster};
use crate::support::TestBroker;

const CAP: u64 = 200_000;

#[actix_rt::test]
async fn the_broker_wide_cap_refuses_or_drops_and_is_never_passed() {
    let cap = CAP.to_string();
    let b = TestBroker::start_with(&[("QUEEN_EPHEMERAL_MAX_BYTES", &cap)]).await;
    configure(&b, "feed", json!({"policy": "dropOldest"})).await;
    let payload = json!("p".repeat(900));
    let batch: Vec<Value> = (0..10).map(|_| payload.clone()).collect();
    let mut refused = 0;
    for q in 0..40 {
        let (status, body) = push(&b, &format!("strict-{q}"), None, &batch).await;
        match status {
            StatusCode::OK => {}
            StatusCode::TOO_MANY_REQUESTS => {
                assert_eq!(body["error"], "broker_full", "{body}");
                refused += 1;
            }
            other => panic!("{other}: {body}"),
        }
    }
    assert!(refused > 0, "40 pushes of ~10 KB each past a 200 KB cap");
    for _ in 0..100 {
        let (status, body) = push(&b, "feed", None, &batch).await;
        assert!(
            status == StatusCode::OK || status == StatusCode::TOO_MANY_REQUESTS,
            "{body}"
        );
    }
    let (_, metrics) = b.get("/metrics").await;
    let held = metrics["ephemeral"]["bytesHeld"]
        .as_u64()
        .expect("ephemeral gauges");
    assert!(held <= CAP, "{held} held past the cap {CAP}");
    assert!(held > CAP / 2, "the cap is used: {held}");
    assert!(metrics["ephemeral"]["refused"].as_u64().unwrap() >= refused);
}

/// VmRSS of a process, in bytes.
fn rss(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("proc status");
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map(|kb| kb * 1024)
        .expect("VmRSS in proc status")
}

/// What the README states a flood may add beside the cap: allocator slack, HTTP buffers.
const OVERHEAD: u64 = 48 << 20;

#[actix_rt::test]
async fn a_flood_keeps_resident_memory_within_the_cap_and_the_overhead() {
    let cap: u64 = 32 << 20;
    let cluster = TestCluster::start(
        1,
        Options::cut().with("QUEEN_EPHEMERAL_MAX_BYTES", &cap.to_string()),
    )
    .await;
    let node = cluster.node(0);
    let pid = cluster.pid(0);
    let (status, _) = node
        .post(
            "/api/v1/ephemeral/configure",
            &json!({"queue": "flood", "options": {"policy": "dropOldest", "maxBytes": 1u64 << 40}}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED);
    let warm = node
        .post(
            "/api/v1/ephemeral/push",
            &json!({"queue": "warm", "messages": [{"payload": 1}]}),
        )
        .await;
    assert_eq!(warm.0, StatusCode::OK);
    let baseline = rss(pid);
    let payload = json!("f".repeat(8 * 1024));
    let messages: Vec<Value> = (0..64).map(|_| json!({"payload": payload})).collect();
    let body = json!({"queue": "flood", "messages": messages});
    let mut peak = 0;
    // Four times the cap, in 512 KB pushes.
    for i in 0..(4 * cap / (512 << 10)) {
        let (status, answer) = node.post("/api/v1/ephemeral/push", &body).await;
        assert_eq!(status, StatusCode::OK, "{answer}");
        if i % 16 == 0 {
            peak = peak.max(rss(pid));
        }
    }
    peak = peak.max(rss(pid));
    let (_, metrics) = node.get("/metrics").await;
    let held = metrics["ephemeral"]["bytesHeld"].as_u64().unwrap();
    assert!(held <= cap, "{held}");
    assert!(
        peak <= baseline + cap + OVERHEAD,
        "resident {} MB over a baseline of {} MB with a cap of {} MB",
        peak >> 20,
        baseline >> 20,
        cap >> 20
    );
    eprintln!(
        "flood: baseline {} MB, peak {} MB, held {} MB, cap {} MB",
        baseline >> 20,
        peak >> 20,
        held >> 20,
        cap >> 20
    );
}
