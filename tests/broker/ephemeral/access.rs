//! Refused input answers 400 in the `{error, reason, detail}` envelope and changes
//! nothing; tenants never see each other's queues; consuming needs read-write, reading
//! gauges read-only.

use reqwest::StatusCode;
use serde_json::{json, Value};

use super::{configure, depth, pop, push_ok};
use crate::support::caller::{tenant_claims, Caller};
use crate::support::tokens::{hs256, SECRET};
use crate::support::TestBroker;
use crate::tenants::HS256;

#[actix_rt::test]
async fn bad_input_is_400_with_a_reason_and_changes_nothing() {
    let b = TestBroker::start().await;
    configure(&b, "q", json!({"maxLength": 5})).await;
    push_ok(&b, "q", &[json!("kept")]).await;
    let posts: [(&str, Value, &str); 9] = [
        (
            "/api/v1/ephemeral/configure",
            json!({"queue": "q", "options": {"maxLength": 0}}),
            "options",
        ),
        (
            "/api/v1/ephemeral/configure",
            json!({"queue": "q", "options": {"bogus": 1}}),
            "unknown_option",
        ),
        (
            "/api/v1/ephemeral/configure",
            json!({"options": {}}),
            "queue",
        ),
        (
            "/api/v1/ephemeral/push",
            json!({"queue": "q", "messages": [{"payload": 1}, {"nope": 2}]}),
            "messages",
        ),
        (
            "/api/v1/ephemeral/push",
            json!({"queue": "q", "messages": []}),
            "messages",
        ),
        (
            "/api/v1/ephemeral/push",
            json!({"queue": "", "messages": [{"payload": 1}]}),
            "queue",
        ),
        (
            "/api/v1/ephemeral/ack",
            json!({"queue": "q", "acks": [{"id": "a", "status": "maybe"}]}),
            "status",
        ),
        (
            "/api/v1/ephemeral/ack",
            json!({"queue": "q", "acks": "all"}),
            "acks",
        ),
        ("/api/v1/ephemeral/reset", json!({"queue": 7}), "json"),
    ];
    for (path, body, reason) in posts {
        let (status, answer) = b.post(path, &body).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{path} {body}: {answer}");
        assert_eq!(answer["error"], "bad_request", "{answer}");
        assert_eq!(answer["reason"], reason, "{path} {body}: {answer}");
        assert!(
            answer["detail"].as_str().is_some_and(|d| !d.is_empty()),
            "{answer}"
        );
    }
    for query in ["batch=0", "wait=perhaps", "timeout=-5", "group="] {
        let (status, answer) = b
            .get(&format!("/api/v1/ephemeral/pop?queue=q&{query}"))
            .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{query}: {answer}");
    }
    let (status, _) = b
        .post_raw(
            "/api/v1/ephemeral/push",
            "application/json",
            b"{not json".to_vec(),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let d = depth(&b, "q").await;
    assert_eq!(d["pending"], 1, "{d}");
    assert_eq!(d["options"]["maxLength"], 5, "{d}");
    assert_eq!(
        super::payloads(&pop(&b, "q", "batch=10").await),
        [json!("kept")]
    );
}

#[actix_rt::test]
async fn tenants_are_isolated_and_consuming_needs_read_write() {
    let b = TestBroker::start_with(&HS256).await;
    let acme = Caller::admin_of(&b.base, "acme");
    let umbrella = Caller::admin_of(&b.base, "umbrella");
    let reader = Caller::new(
        &b.base,
        &hs256(SECRET, &tenant_claims("r", Some("acme"), "read-only")),
    );
    let push = json!({"queue": "live", "messages": [{"payload": "acme's"}]});
    let (status, body) = acme.post("/api/v1/ephemeral/push", &push).await;
    assert_eq!(status, StatusCode::OK, "{body}");

    let (status, theirs) = umbrella.get("/api/v1/ephemeral/pop?queue=live").await;
    assert_eq!(status, StatusCode::OK, "{theirs}");
    assert_eq!(theirs["messages"], json!([]), "{theirs}");
    let (status, _) = umbrella.get("/api/v1/ephemeral/queues/live/depth").await;
    assert_eq!(status, StatusCode::OK, "umbrella's pop made its own queue");
    let (_, listed) = umbrella.get("/api/v1/ephemeral/queues").await;
    assert_eq!(listed["queues"][0]["depth"], 0, "{listed}");

    let (status, gauges) = reader.get("/api/v1/ephemeral/queues/live/depth").await;
    assert_eq!(status, StatusCode::OK, "{gauges}");
    assert_eq!(gauges["pending"], 1, "{gauges}");
    let (status, _) = reader.get("/api/v1/ephemeral/pop?queue=live").await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (status, _) = reader.post("/api/v1/ephemeral/push", &push).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (status, _) = reader.delete("/api/v1/ephemeral/queue/live").await;
    assert_eq!(status, StatusCode::FORBIDDEN);

    let (status, mine) = acme.get("/api/v1/ephemeral/pop?queue=live").await;
    assert_eq!(status, StatusCode::OK, "{mine}");
    assert_eq!(mine["messages"][0]["payload"], "acme's", "{mine}");
}
