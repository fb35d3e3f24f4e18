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
