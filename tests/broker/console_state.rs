//! The console's state pages in a real Chromium against a real broker: the key/value page
//! lists the namespaces the API reports and pages through a namespace's keys, and the locks
//! page shows who holds each permit with the token `POST /api/v1/locks` answered.

use std::path::PathBuf;

use serde_json::{json, Value};

use crate::support::webdriver::Browser;
use crate::support::TestBroker;

fn shots() -> PathBuf {
    std::env::var_os("QUEEN_CONSOLE_SCREENSHOTS")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/console-screenshots")
        })
}

async fn kv(b: &TestBroker, ops: Value) -> Value {
    let (status, body) = b.post("/api/v1/kv", &json!({ "operations": ops })).await;
    assert!(status.is_success(), "{body}");
    body
}

/// The timers page lists a queue's pending timers a page at a time, keys with `/` as they
/// are.
#[actix_rt::test]
async fn the_timers_page_lists_a_queue_pending_timers_and_pages_through_them() {
    let b = TestBroker::start().await;
    let payload = "eyJ0IjoxfQ==";
    let ops: Vec<Value> = (0..120)
        .map(|i| {
            json!({"op": "schedule", "queue": "reminders", "timerKey": format!("user/{i:03}"),
                   "payload": payload, "delayMs": 3_600_000, "txn": format!("t{i}")})
        })
        .collect();
    let (status, body) = b
        .post("/api/v1/timers", &json!({ "operations": ops }))
        .await;
    assert!(status.is_success(), "{body}");
    let browser = Browser::start().await;

    browser.goto(&b.url("/console/timers/reminders")).await;
    let first = browser
        .text_when("#timers-table tbody", |t| t.contains("user/000"))
        .await;
    assert!(
        first.contains("t0") && !first.contains("user/100"),
        "{first}"
    );
    browser.screenshot(&shots(), "timers").await;
    browser.click("#timers-more").await;
    let second = browser
        .text_when("#timers-table tbody", |t| t.contains("user/119"))
        .await;
    assert!(
        second.contains("user/100") && !second.contains("user/099"),
        "{second}"
    );
}

#[actix_rt::test]
async fn the_key_value_page_lists_namespaces_and_pages_through_keys() {
    let b = TestBroker::start().await;
    let puts: Vec<Value> = (0..150)
        .map(|i| {
            json!({"op": "put", "ns": "orders", "key": format!("order-{i:03}"),
                        "value": {"n": i}, "forever": true})
        })
        .collect();
    kv(&b, Value::Array(puts)).await;
    kv(
        &b,
        json!([{"op": "put", "ns": "sessions", "key": "s1", "value": "x", "ttlSeconds": 600}]),
    )
    .await;
    let browser = Browser::start().await;

    browser.goto(&b.url("/console/kv")).await;
    let table = browser
        .text_when("#kv-namespaces tbody", |t| t.contains("sessions"))
        .await;
    assert!(table.contains("orders") && table.contains("150"), "{table}");
    browser.screenshot(&shots(), "kv").await;
    browser.click(r#"a[href="/console/kv/orders"]"#).await;
    let first = browser
        .text_when("#kv-key-table tbody", |t| t.contains("order-000"))
        .await;
    assert!(first.contains(r#"{"n":0}"#), "{first}");
    assert!(!first.contains("order-100"), "one page of 100: {first}");
    browser.screenshot(&shots(), "kv-namespace").await;
    browser.click("#kv-more").await;
    let second = browser
        .text_when("#kv-key-table tbody", |t| t.contains("order-149"))
        .await;
    assert!(
        second.contains("order-100") && !second.contains("order-099"),
        "{second}"
    );
}
#[actix_rt::test]
async fn the_locks_page_shows_each_holder_and_its_token() {
    let b = TestBroker::start().await;
    let (_, acquired) = b
        .post(
            "/api/v1/locks",
            &json!({"operations": [
                {"op": "acquire", "name": "nightly-report", "ttlSeconds": 600, "owner": "worker-a"},
                {"op": "acquire", "name": "crawlers", "ttlSeconds": 600, "owner": "worker-b",
                 "limit": 3},
            ]}),
        )
        .await;
    let token = acquired["results"][0]["token"].as_i64().expect("a token");
    let browser = Browser::start().await;

    browser.goto(&b.url("/console/locks")).await;
    let table = browser
        .text_when("#lock-table tbody", |t| t.contains("nightly-report"))
        .await;

    browser.screenshot(&shots(), "locks").await;
    assert!(
        table.contains("worker-a") && table.contains("worker-b"),
        "{table}"
    );
    assert!(table.contains("crawlers"), "{table}");
    assert!(table.contains(&token.to_string()), "token {token}: {table}");
}

/// The ephemeral page lists declared queues and the ones this node holds, and a queue's
/// page shows its depth: rings, groups with their leases, and what it lost.
#[actix_rt::test]
async fn the_ephemeral_page_lists_queues_and_shows_a_queue_depth() {
    let b = TestBroker::start().await;
    let (status, body) = b
        .post(
            "/api/v1/ephemeral/configure",
            &json!({"queue": "presence", "options": {"policy": "dropOldest", "maxLength": 3}}),
        )
        .await;
    assert!(status.is_success(), "{body}");
    for (queue, n) in [("presence", 5), ("telemetry", 2)] {
        let messages: Vec<Value> = (0..n).map(|i| json!({"payload": {"i": i}})).collect();
        for m in messages {
            let (status, body) = b
                .post(
                    "/api/v1/ephemeral/push",
                    &json!({"queue": queue, "messages": [m]}),
                )
                .await;
            assert!(status.is_success(), "{body}");
        }
    }
    let (status, popped) = b
        .get("/api/v1/ephemeral/pop?queue=presence&group=dashboard&batch=1")
        .await;
    assert!(status.is_success(), "{popped}");
    let browser = Browser::start().await;

    browser.goto(&b.url("/console/ephemeral")).await;
    let table = browser
        .text_when("#ephemeral-queues tbody", |t| {
            t.contains("presence") && t.contains("telemetry")
        })
        .await;
    assert!(table.contains("dropOldest"), "{table}");
    assert!(
        table.contains("no (defaults)"),
        "telemetry is undeclared: {table}"
    );
    browser.screenshot(&shots(), "ephemeral").await;
    browser
        .click(r#"a[href="/console/ephemeral/presence"]"#)
        .await;
    let groups = browser
        .text_when("#ephemeral-group-table tbody", |t| t.contains("dashboard"))
        .await;
    // Cells run together in textContent: group, not yet delivered, leased.
    assert!(groups.contains("dashboard21"), "{groups}");
    let figures = browser
        .text_when("#ephemeral-figures", |t| t.contains("pending"))
        .await;
    assert!(
        figures.contains("pending3") && figures.contains("dropped2"),
        "maxLength 3, five pushed under dropOldest: {figures}"
    );
    browser.screenshot(&shots(), "ephemeral-queue").await;
}
