//! Who sees what: tenants never see each other's keys, reads need read-only and writes
//! read-write; and refused input (400, 413) in the `{error, reason, detail}` envelope
//! changes nothing, even when the batch's earlier ops were sound.

use reqwest::StatusCode;
use serde_json::{json, Value};

use super::{get, put, stored_rows};
use crate::support::caller::{tenant_claims, Caller};
use crate::support::tokens::{hs256, SECRET};
use crate::support::TestBroker;
use crate::tenants::HS256;

fn ops(list: Value) -> Value {
    json!({ "operations": list })
}

#[actix_rt::test]
async fn tenants_are_isolated_and_writes_need_read_write() {
    let b = TestBroker::start_with(&HS256).await;
    let acme = Caller::admin_of(&b.base, "acme");
    let umbrella = Caller::admin_of(&b.base, "umbrella");
    let reader = Caller::new(
        &b.base,
        &hs256(SECRET, &tenant_claims("r", Some("acme"), "read-only")),
    );
    let (status, body) = acme
        .post("/api/v1/kv", &ops(json!([put("app", "k", json!("acme"))])))
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");

    let listing = json!([get("app", "k"),
                         {"op": "getPrefix", "ns": "app", "prefix": "k"}]);
    let (_, theirs) = umbrella.post("/api/v1/kv", &ops(listing.clone())).await;
    let (read_status, mine) = reader.post("/api/v1/kv", &ops(listing)).await;
    let (write_status, refused) = reader
        .post(
            "/api/v1/kv",
            &ops(json!([get("app", "k"), put("app", "k", json!(2))])),
        )
        .await;

    assert_eq!(theirs["results"][0]["found"], false, "{theirs}");
    assert_eq!(theirs["results"][1]["rows"], json!([]), "{theirs}");
    assert_eq!(read_status, StatusCode::OK, "{mine}");
    assert_eq!(mine["results"][0]["value"], "acme", "{mine}");
    assert_eq!(write_status, StatusCode::FORBIDDEN, "{refused}");
    assert_eq!(refused["reason"], "read_write_required", "{refused}");
    let (_, after) = acme
        .post("/api/v1/kv", &ops(json!([get("app", "k")])))
        .await;
    assert_eq!(after["results"][0]["value"], "acme", "{after}");
}

#[actix_rt::test]
async fn refused_input_answers_the_envelope_and_changes_nothing() {
    let b = TestBroker::start().await;
    let sound = put("app", "k", json!(1));
    let cases = [
        (
            json!([sound, {"op": "get", "ns": "Bad!", "key": "k"}]),
            400,
            "namespace",
        ),
        (
            json!([sound, {"op": "nope", "ns": "app", "key": "k"}]),
            400,
            "unknown_op",
        ),
        (
            json!([sound, {"op": "put", "ns": "app", "key": "x", "value": 1}]),
            400,
            "expiry",
        ),
        (
            json!([sound, {"op": "delete", "ns": "app", "key": "k"}]),
            400,
            "duplicate_key",
        ),
        (
            json!([sound, {"op": "check", "ns": "app", "key": "c"}]),
            400,
            "expect",
        ),
        (
            json!([sound, {"op": "getPrefix", "ns": "app", "prefix": ""}]),
            400,
            "key",
        ),
        (
            json!([sound, {"op": "put", "ns": "app", "key": "v", "forever": true,
                           "value": "x".repeat(64 * 1024)}]),
            413,
            "value_too_large",
        ),
        (
            json!([sound, get("app", &"k".repeat(513))]),
            413,
            "key_too_long",
        ),
        (
            Value::Array(
                std::iter::once(sound.clone())
                    .chain((0..256).map(|i| get("app", &format!("k{i}"))))
                    .collect(),
            ),
            413,
            "too_many_ops",
        ),
        (
            json!([sound, {"op": "getMany", "ns": "app",
                           "keys": (0..1024).map(|i| format!("k{i}")).collect::<Vec<_>>()}]),
            413,
            "too_many_keys",
        ),
    ];
    for (list, status, reason) in cases {
        let (got, body) = b.post("/api/v1/kv", &ops(list)).await;
        assert_eq!(got.as_u16(), status, "{reason}: {body}");
        assert_eq!(body["reason"], reason, "{body}");
        assert!(
            body["error"].is_string() && body["detail"].is_string(),
            "{body}"
        );
    }
    let (got, body) = b.post("/api/v1/kv", &json!({"ops": []})).await;
    assert_eq!(got, StatusCode::BAD_REQUEST, "{body}");
    assert_eq!(stored_rows(&b).await, 0, "nothing applied");
}
