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

/// Callers of the flood, each on a connection and a queue of its own, so both HTTP workers
/// parse payloads and the queues' messages are freed where they were not allocated.
const FLOOD_CALLERS: usize = 4;

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
    // Three `dropOldest` queues and one `reject` queue, each allowed the whole cap: only
    // the broker-wide cap bounds them.
    for k in 0..FLOOD_CALLERS {
        let policy = if k + 1 < FLOOD_CALLERS {
            "dropOldest"
        } else {
            "reject"
        };
        let (status, _) = node
            .post(
                "/api/v1/ephemeral/configure",
                &json!({"queue": format!("flood-{k}"),
                        "options": {"policy": policy, "maxBytes": 1u64 << 40}}),
            )
            .await;
        assert_eq!(status, StatusCode::CREATED);
    }
    let warm = node
        .post(
            "/api/v1/ephemeral/push",
            &json!({"queue": "warm", "messages": [{"payload": 1}]}),
        )
        .await;
    assert_eq!(warm.0, StatusCode::OK);
    let baseline = rss(pid);
    let url = format!("{}/api/v1/ephemeral/push", node.url());
    let payload = json!("f".repeat(1024));
    // Eight times the cap, in pushes of 100 messages of 1 KB.
    let pushes = 8 * cap / (100 << 10) / FLOOD_CALLERS as u64;
    let callers = (0..FLOOD_CALLERS).map(|k| {
        let messages: Vec<Value> = (0..100).map(|_| json!({"payload": payload})).collect();
        let body =
            serde_json::to_vec(&json!({"queue": format!("flood-{k}"), "messages": messages}))
                .expect("body");
        let url = url.clone();
        actix_rt::spawn(async move {
            let http = reqwest::Client::new();
            let (mut stored, mut refused) = (0u64, 0u64);
            for _ in 0..pushes {
                let r = http
                    .post(&url)
                    .header("content-type", "application/json")
                    .body(body.clone())
                    .send()
                    .await
                    .expect("push");
                match r.status() {
                    StatusCode::OK => stored += 100,
                    StatusCode::TOO_MANY_REQUESTS => refused += 1,
                    other => panic!("{other}: {}", r.text().await.unwrap_or_default()),
                }
            }
            (stored, refused)
        })
    });
    let sampling = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
    let sampler = {
        let sampling = sampling.clone();
        actix_rt::spawn(async move {
            let mut peak = 0;
            while sampling.load(std::sync::atomic::Ordering::Relaxed) {
                peak = rss(pid).max(peak);
                actix_rt::time::sleep(std::time::Duration::from_millis(5)).await;
            }
            peak
        })
    };
    let mut stored = 0;
    for caller in futures_util::future::join_all(callers).await {
        stored += caller.expect("caller").0;
    }
    sampling.store(false, std::sync::atomic::Ordering::Relaxed);
    let peak = sampler.await.expect("sampler").max(rss(pid));
    let (_, metrics) = node.get("/metrics").await;
    let held = metrics["ephemeral"]["bytesHeld"].as_u64().unwrap();
    assert!(held <= cap, "{held}");
    assert!(
        stored * 1024 > 4 * cap,
        "the flood stored {stored} messages"
    );
    eprintln!(
        "flood: baseline {} MB, peak {} MB, held {} MB, cap {} MB, {stored} messages stored",
        baseline >> 20,
        peak >> 20,
        held >> 20,
        cap >> 20
    );
    assert!(
        peak <= baseline + cap + OVERHEAD,
        "resident {} MB over a baseline of {} MB with a cap of {} MB",
        peak >> 20,
        baseline >> 20,
        cap >> 20
    );
}
