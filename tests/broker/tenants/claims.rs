//! The tenant claim: which tenant a token acts in, and what a tenant sees of the node.

use reqwest::StatusCode;
use serde_json::json;

use super::{stored_queues, HS256};
use crate::support::caller::{tenant_claims, Caller};
use crate::support::tokens::{hs256, SECRET};
use crate::support::TestBroker;

/// A token's tenant claim selects its tenant: the same queue name pushed with a token of
/// tenant `acme` and with a token without the claim makes two queues, one in `acme` and
/// one in the default tenant, and each token sees only its own.
#[actix_rt::test]
async fn the_tenant_claim_selects_the_tenant_and_a_token_without_it_is_the_default_tenant() {
    // Arrange
    let b = TestBroker::start_with(&HS256).await;
    let acme = Caller::admin_of(&b.base, "acme");
    let plain = Caller::new(&b.base, &hs256(SECRET, &tenant_claims("op", None, "admin")));

    // Act
    acme.push(
        "orders",
        "eu",
        &[json!({"who": "acme"}), json!({"who": "acme"})],
    )
    .await;
    plain
        .push("orders", "eu", &[json!({"who": "default"})])
        .await;

    // Assert
    assert_eq!(
        stored_queues(&b.sql().await).await,
        [
            (String::new(), "orders".to_owned()),
            ("acme".to_owned(), "orders".to_owned())
        ]
    );
    let (_, mine) = acme.get("/api/v1/resources/queues/orders").await;
    assert_eq!(mine["totals"]["total"], 2, "{mine}");
    let (_, theirs) = plain.get("/api/v1/resources/queues/orders").await;
    assert_eq!(theirs["totals"]["total"], 1, "{theirs}");
    let got = acme.pop("/api/v1/pop/queue/orders?batch=10").await;
    assert_eq!(got.len(), 2);
    assert!(got.iter().all(|m| m["data"]["who"] == "acme"), "{got:?}");
    b.stop().await;
}

/// A tenant claim that is not a valid name (empty, with a slash, not a string) is a 403
/// JSON error, and nothing is stored.
#[actix_rt::test]
async fn a_malformed_tenant_claim_is_a_403_json_error_that_stores_nothing() {
    let b = TestBroker::start_with(&HS256).await;
    for bad in [json!(""), json!("a/b"), json!(7), json!(["acme"])] {
        let mut claims = tenant_claims("eve", None, "admin");
        claims["tenant"] = bad.clone();
        let eve = Caller::new(&b.base, &hs256(SECRET, &claims));
        let (status, body) = eve
            .post(
                "/api/v1/push",
                &json!({"items": [{"queue": "q", "payload": {}}]}),
            )
            .await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{bad}: {body}");
        assert_eq!(body["code"], "forbidden", "{body}");
        assert!(
            body["error"].as_str().unwrap_or("").contains("tenant"),
            "{body}"
        );
    }
    assert!(stored_queues(&b.sql().await).await.is_empty());
    b.stop().await;
}

/// With `QUEEN_JWT_REQUIRE_TENANT` a token without the claim is refused (403) instead of
/// acting in the default tenant; one with the claim is served.
#[actix_rt::test]
async fn with_the_claim_required_a_token_without_a_tenant_is_refused() {
    let mut vars = HS256.to_vec();
    vars.push(("QUEEN_JWT_REQUIRE_TENANT", "true"));
    let b = TestBroker::start_with(&vars).await;
    let plain = Caller::new(&b.base, &hs256(SECRET, &tenant_claims("op", None, "admin")));
    let (status, body) = plain.get("/api/v1/resources/queues").await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    assert!(
        body["error"]
            .as_str()
            .unwrap_or("")
            .contains("tenant claim"),
        "{body}"
    );
    let (status, body) = Caller::admin_of(&b.base, "acme")
        .get("/api/v1/resources/queues")
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    b.stop().await;
}

/// `QUEEN_JWT_TENANT_CLAIM` names the claim; the default name then means nothing.
#[actix_rt::test]
async fn the_tenant_claim_name_is_a_setting() {
    let mut vars = HS256.to_vec();
    vars.push(("QUEEN_JWT_TENANT_CLAIM", "org"));
    let b = TestBroker::start_with(&vars).await;
    let mut claims = tenant_claims("a", Some("ignored"), "admin");
    claims["org"] = json!("initech");
    Caller::new(&b.base, &hs256(SECRET, &claims))
        .push("q", "p", &[json!(1)])
        .await;
    assert_eq!(
        stored_queues(&b.sql().await).await,
        [("initech".to_owned(), "q".to_owned())]
    );
    b.stop().await;
}

/// Maintenance stops every tenant, so only the default tenant's admin may switch it; any
/// tenant may read it.
#[actix_rt::test]
async fn only_the_default_tenant_switches_maintenance() {
    let b = TestBroker::start_with(&HS256).await;
    let acme = Caller::admin_of(&b.base, "acme");
    let operator = Caller::new(&b.base, &hs256(SECRET, &tenant_claims("op", None, "admin")));
    let (status, body) = acme
        .post("/api/v1/system/maintenance", &json!({"pop": true}))
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    let (status, body) = acme.get("/api/v1/system/maintenance").await;
    assert_eq!(
        (status, &body["pop"]),
        (StatusCode::OK, &json!(false)),
        "{body}"
    );
    let (status, body) = operator
        .post("/api/v1/system/maintenance", &json!({"pop": true}))
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["pop"], true, "{body}");
    b.stop().await;
}

/// A tenant's metrics (JSON and Prometheus, also with its token on the open probe path)
/// hold its own group actors and queues only and none of the node-wide counters; the
/// default tenant's (and a scrape without a token) hold the whole node, every tenant's
/// group lag and dead letters labelled by tenant.
#[actix_rt::test]
async fn a_tenant_sees_only_its_own_metrics_and_the_default_tenant_sees_the_node() {
    // Arrange
    let b = TestBroker::start_with(&HS256).await;
    let acme = Caller::admin_of(&b.base, "acme");
    let globex = Caller::admin_of(&b.base, "globex");
    acme.push("acme-only", "p", &[json!(1)]).await;
    globex.push("globex-only", "p", &[json!(1)]).await;
    acme.pop("/api/v1/pop/queue/acme-only?consumerGroup=acme-group")
        .await;
    globex
        .pop("/api/v1/pop/queue/globex-only?consumerGroup=globex-group")
        .await;

    // Act
    let (_, json_view) = acme.get("/metrics").await;
    let (_, text) = acme.get("/metrics/prometheus").await;
    let (_, workers) = acme.get("/api/v1/analytics/worker-metrics").await;
    let (_, node) = b.get("/metrics").await;
    let (_, node_scrape) = b.get("/metrics/prometheus").await;

    // Assert
    let text = text.as_str().map(str::to_owned).unwrap_or_default();
    let json_text = json_view.to_string();
    assert!(json_text.contains("acme-group"), "{json_view}");
    assert!(!json_text.contains("globex"), "{json_view}");
    assert!(
        json_view.get("pops").is_none() && json_view.get("pool").is_none(),
        "{json_view}"
    );
    assert!(text.contains("acme-only"), "{text}");
    assert!(
        !text.contains("globex") && !text.contains("queen_pops_total"),
        "{text}"
    );
    assert!(!workers.to_string().contains("globex"), "{workers}");
    assert!(workers.to_string().contains("acme-group"), "{workers}");
    assert!(node.get("pops").is_some(), "{node}");
    let node_text = node["groups"].to_string();
    assert!(
        node_text.contains("acme-group") && node_text.contains("globex-group"),
        "{node}"
    );
    let node_scrape = node_scrape.as_str().unwrap_or_default();
    for series in [
        r#"queen_consumer_group_lag_messages{group="acme-group",queue="acme-only",tenant="acme"}"#,
        r#"queen_consumer_group_lag_messages{group="globex-group",queue="globex-only",tenant="globex"}"#,
        r#"queen_queue_depth{queue="globex-only",tenant="globex"}"#,
        r#"queen_dead_letters{tenant="globex"} 0"#,
    ] {
        assert!(
            node_scrape.contains(series),
            "{series} not in the operator's scrape:\n{node_scrape}"
        );
    }
    b.stop().await;
}
