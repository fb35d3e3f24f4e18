//! `GET /api/v1/resources/kv`: the tenant's namespaces with their live keys (an expired
//! row counts for nothing, before any sweep), what of them expires, their value bytes and
//! last write; what the console's key/value page starts from.

use reqwest::StatusCode;
use serde_json::json;

use super::{put, results};
use crate::support::TestBroker;

#[actix_rt::test]
async fn the_listing_counts_each_namespaces_live_keys_only() {
    let b = TestBroker::start().await;
    let (_, empty) = b.get("/api/v1/resources/kv").await;
    assert_eq!(empty, json!({"namespaces": []}));
    results(
        &b,
        json!([
            put("orders", "a", json!("12345")),
            put("orders", "b", json!(1)),
            {"op": "put", "ns": "orders", "key": "c", "value": true, "ttlSeconds": 600},
            {"op": "put", "ns": "sessions", "key": "gone", "value": 1, "ttlSeconds": 600},
        ]),
    )
    .await;
    b.sql()
        .await
        .execute(
            "UPDATE queen.kv SET expires_at = now() - interval '1 second' WHERE key = 'gone'",
            &[],
        )
        .await
        .expect("expire a key");

    let (status, body) = b.get("/api/v1/resources/kv").await;

    assert_eq!(status, StatusCode::OK, "{body}");
    let namespaces = body["namespaces"].as_array().expect("a list");
    assert_eq!(
        namespaces.len(),
        1,
        "the expired namespace is not listed: {body}"
    );
    let orders = &namespaces[0];
    assert_eq!(orders["namespace"], "orders");
    assert_eq!(
        (&orders["keys"], &orders["expiring"]),
        (&json!(3), &json!(1))
    );
    assert_eq!(
        orders["bytes"],
        json!("\"12345\"".len() + 1 + 4),
        "{orders}"
    );
    assert!(orders["updatedAt"]
        .as_str()
        .is_some_and(|t| t.ends_with('Z')));
}

#[actix_rt::test]
async fn a_namespaces_keys_page_in_byte_order_with_or_without_a_prefix() {
    let b = TestBroker::start().await;
    let puts: Vec<_> = ["b-2", "a-1", "b-1", "c", "b-3"]
        .iter()
        .map(|k| put("ns1", k, json!(k)))
        .collect();
    results(&b, serde_json::Value::Array(puts)).await;
    let keys = |body: &serde_json::Value| -> Vec<String> {
        body["rows"]
            .as_array()
            .expect("rows")
            .iter()
            .map(|r| r["key"].as_str().expect("a key").to_owned())
            .collect()
    };

    let (_, first) = b.get("/api/v1/resources/kv/ns1?limit=2").await;
    let after = first["nextAfter"].as_str().expect("a next page").to_owned();
    let (_, second) = b
        .get(&format!("/api/v1/resources/kv/ns1?limit=2&after={after}"))
        .await;
    let (_, last) = b.get("/api/v1/resources/kv/ns1?limit=2&after=b-2").await;
    let (_, prefixed) = b.get("/api/v1/resources/kv/ns1?prefix=b-").await;

    assert_eq!(keys(&first), ["a-1", "b-1"]);
    assert_eq!(first["truncated"], true);
    assert_eq!(keys(&second), ["b-2", "b-3"]);
    assert_eq!(keys(&last), ["b-3", "c"]);
    assert_eq!(
        (&last["truncated"], &last["nextAfter"]),
        (&json!(false), &json!(null))
    );
    assert_eq!(keys(&prefixed), ["b-1", "b-2", "b-3"]);
    assert_eq!(prefixed["rows"][0]["value"], "b-1");
    for bad in [
        "/api/v1/resources/kv/Bad%20NS",
        "/api/v1/resources/kv/ns1?limit=x",
    ] {
        let (status, body) = b.get(bad).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{bad}: {body}");
    }
}
