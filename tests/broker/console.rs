//! The web console in a real Chromium (through ChromeDriver) against a real broker with
//! real data: what the pages show matches the API, and what they do changes the broker.
//! Each test saves a screenshot of the pages it visits into `target/console-screenshots/`
//! (or `$QUEEN_CONSOLE_SCREENSHOTS`: `docs/console/` holds the committed ones).

use std::path::PathBuf;

use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::support::fixtures::{configure, entry};
use crate::support::webdriver::Browser;
use crate::support::TestBroker;

fn shots() -> PathBuf {
    std::env::var_os("QUEEN_CONSOLE_SCREENSHOTS")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/console-screenshots")
        })
}

/// Pushes `n` numbered messages to `queue`/`partition`.
async fn fill(b: &TestBroker, queue: &str, partition: &str, n: usize) {
    let payloads: Vec<Value> = (0..n).map(|i| json!({ "n": i })).collect();
    b.push(queue, partition, &payloads).await;
}

/// The overview lists the queue that was pushed to with its depth, and draws the live chart.
#[actix_rt::test]
async fn the_overview_page_shows_the_queue_that_was_pushed_to_and_its_depth() {
    let b = TestBroker::start().await;
    fill(&b, "console-orders", "eu", 7).await;
    let browser = Browser::start().await;

    browser.goto(&b.url("/")).await;

    let row = browser
        .text_when("#overview-queues tbody", |t| t.contains("console-orders"))
        .await;
    assert!(row.contains('7'), "depth 7 shown: {row}");
    browser.text_when("#stat-depth", |t| t == "7").await;
    // More traffic while the page watches: the live chart shows a rate above zero.
    fill(&b, "console-orders", "us", 40).await;
    browser
        .text_when(r#"[data-series="in"]"#, |t| t != "0.0")
        .await;
    browser.text_when("#stat-depth", |t| t == "47").await;
    let samples =
        "return document.querySelector('#rate polyline').getAttribute('points').split(' ').length";
    let drawn = crate::support::eventually(std::time::Duration::from_secs(20), || async {
        browser
            .script(samples, json!([]))
            .await
            .as_u64()
            .filter(|n| *n >= 3)
    })
    .await;
    assert!(
        drawn.is_some(),
        "the live chart draws a line through its samples"
    );
    browser.text_when("#node", |t| t.contains("ready")).await;
    browser.screenshot(&shots(), "overview").await;
    browser.goto(&b.url("/console/queues")).await;
    browser
        .text_when("#queue-table tbody", |t| t.contains("console-orders"))
        .await;
    browser.screenshot(&shots(), "queues").await;
}

/// A group's lag on the consumer-groups page is the number the API gives.
#[actix_rt::test]
async fn the_consumer_groups_page_shows_the_lag_the_api_reports() {
    let b = TestBroker::start().await;
    fill(&b, "console-lag", "p1", 5).await;
    let popped = b
        .pop_messages("/api/v1/pop/queue/console-lag?batch=2&consumerGroup=billing&autoAck=true")
        .await;
    assert_eq!(popped.len(), 2);
    let (_, groups) = b.get("/api/v1/consumer-groups").await;
    let api_lag = groups
        .as_array()
        .expect("a list")
        .iter()
        .find(|g| g["name"] == "billing" && g["queueName"] == "console-lag")
        .map(|g| g["totalLag"].clone())
        .expect("the group is listed");
    assert_eq!(api_lag, json!(3), "{groups}");
    let browser = Browser::start().await;

    browser.goto(&b.url("/console/groups")).await;

    let css = r#".lag[data-group="billing"][data-queue="console-lag"]"#;
    let shown = browser.text_when(css, |t| !t.is_empty()).await;
    assert_eq!(shown, api_lag.to_string());
    browser
        .click(r#"button[data-act="detail"][data-group="billing"]"#)
        .await;
    browser
        .text_when("#group-detail", |t| t.contains("p1"))
        .await;
    browser.screenshot(&shots(), "groups").await;
    browser
        .goto(&b.url("/console/messages?queue=console-lag"))
        .await;
    browser
        .text_when("#messages tbody", |t| t.contains("console-lag/p1"))
        .await;
    browser.screenshot(&shots(), "messages").await;
    let first = &popped[0];
    let trace = json!({"transactionId": first["transactionId"], "partitionId": first["partitionId"],
        "consumerGroup": "billing", "traceNames": ["invoice-7"], "eventType": "billed", "data": {"amount": 12}});
    let (status, _) = b.post("/api/v1/traces", &trace).await;
    assert_eq!(status, StatusCode::CREATED);
    let txn = first["transactionId"].as_str().expect("a transaction id");
    browser.click(&format!("#messages a[href$='/{txn}']")).await;
    browser
        .text_when("#message-payload", |t| t.contains("\"n\": 0"))
        .await;
    browser
        .text_when("#message-traces", |t| {
            t.contains("billed") && t.contains("invoice-7")
        })
        .await;
    browser
        .text_when("#message-groups", |t| t.contains("billing"))
        .await;
    browser.screenshot(&shots(), "message").await;
}

/// Retry on the dead-letters page puts the message back in its queue and clears the letter.
#[actix_rt::test]
async fn a_dead_letter_retried_from_the_page_is_back_in_its_queue() {
    let b = TestBroker::start().await;
    fill(&b, "console-dlq", "Default", 1).await;
    let got = b
        .pop_messages("/api/v1/pop/queue/console-dlq?batch=1")
        .await;
    let (_, verdict) = b
        .post("/api/v1/ack", &entry(&got[0], "dlq", Some("handler broke")))
        .await;
    assert_eq!(verdict[0]["success"], true, "{verdict}");
    let txn = got[0]["transactionId"]
        .as_str()
        .expect("a transaction id")
        .to_owned();
    let browser = Browser::start().await;

    browser.goto(&b.url("/console/dlq")).await;
    browser
        .text_when("#dlq tbody", |t| t.contains("handler broke"))
        .await;
    browser
        .click(&format!(r#"button[data-act="inspect"][data-txn="{txn}"]"#))
        .await;
    browser
        .text_when("#dlq tbody pre", |t| t.contains("\"n\": 0"))
        .await;
    browser.screenshot(&shots(), "dlq").await;
    browser
        .click(&format!(r#"button[data-act="retry"][data-txn="{txn}"]"#))
        .await;
    browser
        .text_when("#dlq-result", |t| t.contains("back in its queue"))
        .await;

    let (_, dlq) = b.get("/api/v1/dlq?queue=console-dlq").await;
    assert_eq!(dlq["total"], 0, "{dlq}");
    let again = b
        .pop_messages("/api/v1/pop/queue/console-dlq?batch=1")
        .await;
    assert_eq!(again.len(), 1);
    let copy = again[0]["transactionId"]
        .as_str()
        .expect("a transaction id");
    assert!(copy.starts_with(&format!("{txn}:retry:")), "{copy}");
    assert_eq!(again[0]["data"], json!({ "n": 0 }));
}

/// An option the broker refuses shows the broker's own error on the queue page, and
/// nothing is stored.
#[actix_rt::test]
async fn an_invalid_option_on_the_queue_page_shows_the_brokers_error() {
    let b = TestBroker::start().await;
    configure(&b, "console-opts", json!({ "leaseTime": 30 })).await;
    fill(&b, "console-opts", "Default", 2).await;
    let (status, refused) = b
        .post(
            "/api/v1/configure",
            &json!({"queue": "console-opts", "options": {"leaseTime": 0}}),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let error = refused["error"].as_str().expect("an error text").to_owned();
    let browser = Browser::start().await;

    browser.goto(&b.url("/console/queues/console-opts")).await;
    browser
        .text_when("#queue-config", |t| t.contains("\"lease_time\": 30"))
        .await;
    browser.type_into("#opt-leaseTime", "0").await;
    browser.click("#configure").await;

    let shown = browser
        .text_when("#configure-result", |t| t.starts_with("400"))
        .await;
    assert_eq!(shown, format!("400: {error}"));
    browser.screenshot(&shots(), "queue").await;
    let (_, queue) = b.get("/api/v1/resources/queues/console-opts").await;
    assert_eq!(queue["config"]["lease_time"], 30, "{queue}");
}

/// The pop switch on the maintenance page asks for confirmation, then pauses pops.
#[actix_rt::test]
async fn the_maintenance_page_pauses_pops_after_a_confirmation() {
    let b = TestBroker::start().await;
    let browser = Browser::start().await;

    browser.goto(&b.url("/console/maintenance")).await;
    browser.text_when("#switch-pop", |t| t == "running").await;
    browser.click("#toggle-pop").await;
    browser
        .text_when("#confirm-text", |t| t.contains("Pause"))
        .await;
    browser.screenshot(&shots(), "maintenance").await;
    browser.click("#confirm-ok").await;
    browser.text_when("#switch-pop", |t| t == "paused").await;

    let (_, state) = b.get("/api/v1/system/maintenance").await;
    assert_eq!(state["pop"], true, "{state}");
}

/// The push switch on the maintenance page says what it does, then sends pushes to the
/// spool.
#[actix_rt::test]
async fn the_maintenance_page_sends_pushes_to_the_spool_after_a_confirmation() {
    let b = TestBroker::start().await;
    let browser = Browser::start().await;

    browser.goto(&b.url("/console/maintenance")).await;
    browser.text_when("#switch-push", |t| t == "running").await;
    browser.click("#toggle-push").await;
    browser
        .text_when("#confirm-text", |t| t.contains("spool"))
        .await;
    browser.click("#confirm-ok").await;
    browser.text_when("#switch-push", |t| t == "spooled").await;

    let (_, state) = b.get("/api/v1/system/maintenance").await;
    assert_eq!(state["push"], true, "{state}");
    assert_eq!(state["pop"], false, "{state}");
}

/// "Seek to end" on the consumer-groups page, once confirmed, leaves the group no lag.
#[actix_rt::test]
async fn seeking_a_group_to_the_end_from_the_page_clears_its_lag() {
    let b = TestBroker::start().await;
    fill(&b, "console-seek", "p", 4).await;
    let got = b
        .pop_messages("/api/v1/pop/queue/console-seek?batch=1&consumerGroup=late&autoAck=true")
        .await;
    assert_eq!(got.len(), 1);
    let browser = Browser::start().await;

    browser.goto(&b.url("/console/groups?group=late")).await;
    let lag = r#".lag[data-group="late"][data-queue="console-seek"]"#;
    browser.text_when(lag, |t| t == "3").await;
    browser
        .click(r#"button[data-act="end"][data-group="late"]"#)
        .await;
    browser
        .text_when("#confirm-text", |t| t.contains("late"))
        .await;
    browser.click("#confirm-ok").await;

    browser
        .text_when("#group-result", |t| t.contains("end of console-seek"))
        .await;
    browser.text_when(lag, |t| t == "0").await;
    let (_, groups) = b.get("/api/v1/consumer-groups").await;
    let late = groups
        .as_array()
        .expect("a list")
        .iter()
        .find(|g| g["name"] == "late")
        .cloned()
        .expect("the group is listed");
    assert_eq!(late["totalLag"], 0, "{late}");
}
