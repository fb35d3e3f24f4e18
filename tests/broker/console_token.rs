//! The console with authentication on, in a real Chromium: it asks for a bearer token,
//! keeps it in the tab's sessionStorage and sends it on every API call, the metrics scrape
//! included, so a tenant's token shows that tenant's queues and gauges only.

use serde_json::json;

use crate::support::caller::{tenant_claims, Caller};
use crate::support::tokens::{hs256, SECRET};
use crate::support::webdriver::Browser;
use crate::support::TestBroker;

/// Three tenants own data (two of them a queue `orders`, of depths 3 and 8); the console
/// opened with tenant `acme`'s token (typed into its token dialog) lists acme's `orders`
/// alone, with acme's depth from the Prometheus gauges (an anonymous scrape of the open
/// metrics path would show every tenant's, the last one `zulu`'s 8); after a reload the
/// token is still there and the dialog does not come back; "Forget token" drops it and
/// the console asks again.
#[actix_rt::test]
async fn the_console_asks_for_a_token_and_sends_it_on_every_call() {
    // Arrange
    let b = TestBroker::start_with(&[("JWT_ENABLED", "true"), ("JWT_SECRET", SECRET)]).await;
    let token = hs256(SECRET, &tenant_claims("ana", Some("acme"), "read-only"));
    let payloads = |n: usize| (0..n).map(|i| json!({ "n": i })).collect::<Vec<_>>();
    Caller::admin_of(&b.base, "acme")
        .push("orders", "eu", &payloads(3))
        .await;
    Caller::admin_of(&b.base, "zulu")
        .push("orders", "eu", &payloads(8))
        .await;
    Caller::new(&b.base, &hs256(SECRET, &tenant_claims("op", None, "admin")))
        .push("default-only", "eu", &payloads(1))
        .await;
    let browser = Browser::start().await;

    // Act
    browser.goto(&b.url("/console/queues")).await;
    let open = "return document.getElementById('token').open";
    let asked = crate::support::eventually(std::time::Duration::from_secs(20), || async {
        browser
            .script(open, json!([]))
            .await
            .as_bool()
            .filter(|o| *o)
    })
    .await;
    assert!(asked.is_some(), "the console never asked for a token");
    browser.type_into("#token-input", &token).await;
    browser.click("#token-ok").await;

    // Assert
    let table = browser
        .text_when("#queue-table tbody", |t| t.contains("orders"))
        .await;
    assert!(!table.contains("default-only"), "{table}");
    browser.text_when("td[data-col=depth]", |t| t == "3").await;
    let kept = browser
        .script("return sessionStorage.getItem('queen.token')", json!([]))
        .await;
    assert_eq!(kept.as_str(), Some(token.as_str()));

    browser.goto(&b.url("/console/queues")).await;
    browser.text_when("td[data-col=depth]", |t| t == "3").await;
    let reopened = browser.script(open, json!([])).await;
    assert_eq!(
        reopened,
        json!(false),
        "the kept token is used after a reload"
    );
    browser.click("#token-forget").await;
    let asked_again = crate::support::eventually(std::time::Duration::from_secs(20), || async {
        browser
            .script(open, json!([]))
            .await
            .as_bool()
            .filter(|o| *o)
    })
    .await;
    assert!(
        asked_again.is_some(),
        "forgetting the token asks for one again"
    );
    let gone = browser
        .script("return sessionStorage.getItem('queen.token')", json!([]))
        .await;
    assert_eq!(gone, json!(null));
    b.stop().await;
}
