//! Who sees what: one tenant never sees or takes another's permits, `get` needs read-only
//! and everything else read-write; and refused input answers 400 in the `{error, reason,
//! detail}` envelope and changes nothing, even when the call's earlier ops were sound.

use reqwest::StatusCode;
use serde_json::{json, Value};

use super::{acquire, get, permit_rows};
use crate::support::caller::{tenant_claims, Caller};
use crate::support::tokens::{hs256, SECRET};
use crate::support::TestBroker;
use crate::tenants::HS256;

fn ops(list: Value) -> Value {
    json!({ "operations": list })
}

#[actix_rt::test]
async fn tenants_are_isolated_and_only_get_is_read_only() {
    let b = TestBroker::start_with(&HS256).await;
    let acme = Caller::admin_of(&b.base, "acme");
    let umbrella = Caller::admin_of(&b.base, "umbrella");
    let reader = Caller::new(
        &b.base,
        &hs256(SECRET, &tenant_claims("r", Some("acme"), "read-only")),
    );
    let (status, mine) = acme
        .post("/api/v1/locks", &ops(json!([acquire("l", "acme", 30)])))
        .await;
    assert_eq!(status, StatusCode::OK, "{mine}");
    let held = mine["results"][0]["token"].clone();

    let (_, theirs) = umbrella
        .post(
            "/api/v1/locks",
            &ops(json!([get("l"), acquire("m", "umbrella", 30)])),
        )
        .await;
    assert_eq!(theirs["results"][0], json!({"held": false, "holders": []}));
    let (_, stolen) = umbrella
        .post("/api/v1/locks", &ops(json!([acquire("l", "umbrella", 30)])))
        .await;
    assert_eq!(stolen["results"][0]["acquired"], true, "their own lock l");
    let (_, released) = umbrella
        .post(
            "/api/v1/locks",
            &ops(json!([{"op": "release", "name": "m", "token": held}])),
        )
        .await;
    assert_eq!(released["results"][0]["released"], false, "{released}");

    let (read_status, seen) = reader.post("/api/v1/locks", &ops(json!([get("l")]))).await;
    assert_eq!(read_status, StatusCode::OK, "{seen}");
    assert_eq!(seen["results"][0]["holders"][0]["owner"], "acme", "{seen}");
    assert_eq!(seen["results"][0]["holders"][0]["token"], held, "{seen}");
    let before = permit_rows(&b).await;
    for write in [
        acquire("n", "r", 30),
        json!({"op": "renew", "name": "l", "token": held, "ttlSeconds": 30}),
        json!({"op": "release", "name": "l", "token": held}),
    ] {
        let (status, refused) = reader
            .post("/api/v1/locks", &ops(json!([get("x"), write])))
            .await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{refused}");
        assert_eq!(refused["reason"], "read_write_required", "{refused}");
    }
    assert_eq!(permit_rows(&b).await, before, "nothing applied");
}

#[actix_rt::test]
async fn refused_input_answers_the_envelope_and_changes_nothing() {
    let b = TestBroker::start().await;
    let sound = acquire("ok", "me", 30);
    let cases = [
        (json!({"op": "get", "name": "a#b"}), "locks_bad_name"),
        (json!({"op": "get", "name": ""}), "locks_bad_name"),
        (
            json!({"op": "get", "name": "x".repeat(257)}),
            "locks_bad_name",
        ),
        (json!({"op": "get", "name": "a\u{1}"}), "locks_bad_name"),
        (json!({"op": "acquire", "name": "a"}), "locks_ttl_required"),
        (
            json!({"op": "acquire", "name": "a", "forever": true}),
            "locks_ttl_required",
        ),
        (
            json!({"op": "acquire", "name": "a", "ttlSeconds": -1}),
            "locks_bad_ttl",
        ),
        (
            json!({"op": "acquire", "name": "a", "ttlSeconds": 5, "limit": 0}),
            "locks_bad_limit",
        ),
        (
            json!({"op": "acquire", "name": "a", "ttlSeconds": 5, "owner": "o\n"}),
            "locks_bad_owner",
        ),
        (
            json!({"op": "renew", "name": "a", "ttlSeconds": 5, "token": "7"}),
            "locks_bad_token",
        ),
        (
            json!({"op": "release", "name": "a", "token": 7, "slot": -1}),
            "locks_bad_slot",
        ),
        (json!({"op": "steal", "name": "a"}), "locks_unknown_op"),
        (
            json!({"op": "get", "name": "ok"}),
            "locks_duplicate_in_call",
        ),
    ];
    for (bad, reason) in cases {
        let (status, body) = b.post("/api/v1/locks", &ops(json!([sound, bad]))).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{reason}: {body}");
        assert_eq!(body["reason"], reason, "{body}");
        assert_eq!(body["error"], "bad_request", "{body}");
        assert!(body["detail"].is_string(), "{body}");
    }
    let many: Vec<Value> = std::iter::once(sound.clone())
        .chain((0..64).map(|i| get(&format!("l{i}"))))
        .collect();
    let (status, body) = b.post("/api/v1/locks", &ops(Value::Array(many))).await;
    assert_eq!(
        (status, &body["reason"]),
        (StatusCode::BAD_REQUEST, &json!("locks_too_many_ops"))
    );
    let (status, body) = b.post("/api/v1/locks", &json!({"ops": [sound]})).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert!(permit_rows(&b).await.is_empty(), "nothing applied");
}
