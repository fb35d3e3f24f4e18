//! Monitoring shipped with the chart: the Grafana dashboard (a ConfigMap for Grafana's
//! sidecar) and the PrometheusRule alerts. Every query parses as PromQL and names only
//! metrics a real broker serves on `/metrics/prometheus`, so neither drifts from the code.

use std::collections::BTreeSet;

use serde_json::{json, Value};

use super::render;
use super::FULLNAME;
use crate::support::TestBroker;

/// The dashboard file the chart ships.
fn dashboard() -> Value {
    let text = std::fs::read_to_string(render::chart_dir().join("dashboards/queen.json"))
        .expect("helm/queen/dashboards/queen.json exists");
    serde_json::from_str(&text).expect("the dashboard is JSON")
}

/// Every PromQL expression of the dashboard's panels.
fn dashboard_queries(dashboard: &Value) -> Vec<String> {
    let mut out = Vec::new();
    for panel in dashboard["panels"].as_array().expect("panels") {
        for target in panel["targets"].as_array().into_iter().flatten() {
            out.push(target["expr"].as_str().expect("expr").to_owned());
        }
    }
    out
}

/// Parses a query as PromQL once Grafana's variables are given values; panics naming it.
fn assert_promql(query: &str) {
    let plain = query
        .replace("$__rate_interval", "5m")
        .replace("$job", ".*");
    if let Err(error) = promql_parser::parser::parse(&plain) {
        panic!("not PromQL: {error}\n{query}");
    }
}

/// `queen_*` metric names a query reads (histogram series mapped to their family).
fn metric_names(query: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    let bytes = query.as_bytes();
    let mut i = 0;
    while let Some(at) = query[i..].find("queen_") {
        let start = i + at;
        let mut end = start;
        while end < bytes.len() && (bytes[end].is_ascii_alphanumeric() || bytes[end] == b'_') {
            end += 1;
        }
        let name = &query[start..end];
        let family = ["_bucket", "_count", "_sum"]
            .iter()
            .find_map(|s| name.strip_suffix(s).filter(|f| f.ends_with("_seconds")))
            .unwrap_or(name);
        names.insert(family.to_owned());
        i = end;
    }
    names
}

/// The metric families a real broker serves after some traffic.
async fn served_families() -> BTreeSet<String> {
    let b = TestBroker::start().await;
    b.push("mon", "p", &[json!(1), json!(2)]).await;
    let got = b
        .pop_messages("/api/v1/pop/queue/mon?consumerGroup=g")
        .await;
    b.ack_all(&got, "completed", Some("g")).await;
    let (_, text) = b.get("/metrics/prometheus").await;
    let text = text.as_str().expect("text").to_owned();
    b.stop().await;
    text.lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .filter_map(|l| l.split(' ').next())
        .map(str::to_owned)
        .collect()
}

/// The dashboard ConfigMap appears only when enabled, carries the sidecar's label and the
/// dashboard file unchanged.
#[test]
fn helm_template_renders_the_grafana_dashboard_configmap_only_when_enabled() {
    let default = render::render(&[]);
    let on = render::render(&[("metrics.grafanaDashboard.enabled", "true")]);

    let name = format!("{FULLNAME}-dashboard");
    assert!(!default
        .all("ConfigMap")
        .iter()
        .any(|c| c["metadata"]["name"] == name.as_str()));
    let map = on.named("ConfigMap", &name);
    assert_eq!(map["metadata"]["labels"]["grafana_dashboard"], "1");
    let shipped: Value = serde_json::from_str(map["data"]["queen.json"].as_str().expect("data"))
        .expect("the ConfigMap holds JSON");
    assert_eq!(shipped, dashboard());
}

/// Every dashboard query is PromQL over metrics the broker really serves, and the panels
/// cover what operators look at first.
#[actix_rt::test]
async fn the_grafana_dashboard_queries_metrics_the_broker_serves() {
    let served = served_families().await;
    let dashboard = dashboard();
    let queries = dashboard_queries(&dashboard);

    let mut read = BTreeSet::new();
    for q in &queries {
        assert_promql(q);
        read.extend(metric_names(q));
    }

    let unknown: Vec<_> = read.difference(&served).collect();
    assert!(
        unknown.is_empty(),
        "the dashboard reads metrics nobody serves: {unknown:?}"
    );
    for wanted in [
        "queen_push_duration_seconds",
        "queen_pop_duration_seconds",
        "queen_ack_duration_seconds",
        "queen_wake_wait_seconds",
        "queen_sql_duration_seconds",
        "queen_pool_wait_seconds",
        "queen_consumer_group_lag_messages",
        "queen_queue_depth",
        "queen_dead_letters",
        "queen_ready",
    ] {
        assert!(read.contains(wanted), "no panel shows {wanted}");
    }
}

/// The PrometheusRule appears only when enabled, has the four kinds of alert the issue asks
/// for, and each is PromQL over this release's brokers' served metrics.
#[actix_rt::test]
async fn helm_template_renders_alert_rules_that_parse_and_read_served_metrics() {
    let served = served_families().await;
    let default = render::render(&[]);
    let on = render::render(&[
        ("metrics.prometheusRule.enabled", "true"),
        ("metrics.prometheusRule.labels.release", "prom"),
        ("metrics.prometheusRule.lagSeconds", "120"),
    ]);

    assert!(default.all("PrometheusRule").is_empty());
    let rule = on.one("PrometheusRule");
    assert_eq!(rule["metadata"]["labels"]["release"], "prom");
    let rules = rule["spec"]["groups"][0]["rules"]
        .as_array()
        .expect("rules");
    let names: BTreeSet<&str> = rules.iter().filter_map(|r| r["alert"].as_str()).collect();
    for wanted in [
        "QueenConsumerGroupLagGrowing",
        "QueenQueueLagGrowing",
        "QueenDeadLettersGrowing",
        "QueenNodeNotReady",
        "QueenPoolExhausted",
    ] {
        assert!(names.contains(wanted), "{wanted} missing: {names:?}");
    }
    for r in rules {
        let expr = r["expr"].as_str().expect("expr");
        assert_promql(expr);
        assert!(expr.contains(&format!("job=\"{FULLNAME}\"")), "{expr}");
        let unknown: Vec<_> = metric_names(expr).difference(&served).cloned().collect();
        assert!(unknown.is_empty(), "{} reads {unknown:?}", r["alert"]);
        assert!(r["labels"]["severity"].is_string());
    }
    let lag = rules
        .iter()
        .find(|r| r["alert"] == "QueenConsumerGroupLagGrowing")
        .expect("lag rule");
    assert!(
        lag["expr"].as_str().unwrap_or("").contains("> 120"),
        "{lag}"
    );
}
