//! The eight routes' answers as the published client reads them, implicit creation, the
//! one 404 (depth of an unknown queue), and what PostgreSQL holds: the declaration only.

use reqwest::StatusCode;
use serde_json::json;

use super::{configure, depth, pop, push_ok};
use crate::support::TestBroker;

#[actix_rt::test]
async fn the_eight_routes_answer_the_contracts_shapes() {
    let b = TestBroker::start().await;
    let declared = configure(
        &b,
        "presence",
        json!({"maxLength": 50, "policy": "dropOldest"}),
    )
    .await;
    assert_eq!(declared["options"]["maxLength"], 50, "{declared}");
    assert_eq!(declared["options"]["policy"], "dropOldest", "{declared}");
    assert_eq!(declared["options"]["leaseSeconds"], 30, "{declared}");

    push_ok(
        &b,
        "presence",
        &[json!({"user": "a"}), json!("two"), json!(null)],
    )
    .await;
    let messages = pop(&b, "presence", "batch=10").await;
    assert_eq!(messages.len(), 3);
    assert_eq!(messages[0]["payload"], json!({"user": "a"}));
    assert_eq!(messages[2]["payload"], json!(null));
    for m in &messages {
        assert_eq!(m["partition"], "Default", "{m}");
        assert_eq!(m["attempts"], 1, "{m}");
        assert!(m["id"].as_str().is_some_and(|id| !id.is_empty()), "{m}");
    }

    let d = depth(&b, "presence").await;
    assert_eq!(d["pending"], 3, "{d}");
    assert_eq!(d["groups"][0]["leased"], 3, "{d}");
    let (status, list) = b.get("/api/v1/ephemeral/queues").await;
    assert_eq!(status, StatusCode::OK, "{list}");
    assert_eq!(list["count"], 1, "{list}");
    assert_eq!(list["queues"][0]["queue"], "presence", "{list}");
    assert_eq!(list["queues"][0]["depth"], 3, "{list}");

    let (status, reset) = b
        .post("/api/v1/ephemeral/reset", &json!({"queue": "presence"}))
        .await;
    assert_eq!(status, StatusCode::OK, "{reset}");
    assert_eq!(reset["dropped"], 3, "{reset}");
    assert_eq!(depth(&b, "presence").await["options"]["maxLength"], 50);

    let deleted = b
        .http
        .delete(b.url("/api/v1/ephemeral/queue/presence"))
        .send()
        .await
        .unwrap();
    assert_eq!(deleted.status(), StatusCode::OK);
    let deleted: serde_json::Value = deleted.json().await.unwrap();
    assert_eq!(deleted["deleted"], true, "{deleted}");
    let (status, gone) = b.get("/api/v1/ephemeral/queues/presence/depth").await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{gone}");
    assert_eq!(gone["error"], "ephemeral_queue_not_found", "{gone}");
}

#[actix_rt::test]
async fn unknown_queues_are_made_by_push_and_pop_and_answer_zero_to_reset_and_delete() {
    let b = TestBroker::start().await;
    let (status, reset) = b
        .post("/api/v1/ephemeral/reset", &json!({"queue": "never"}))
        .await;
    assert_eq!(status, StatusCode::OK, "{reset}");
    assert_eq!(reset["dropped"], 0, "{reset}");
    let deleted: serde_json::Value = b
        .http
        .delete(b.url("/api/v1/ephemeral/queue/never"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(deleted["deleted"], false, "{deleted}");
    let (status, _) = b.get("/api/v1/ephemeral/queues/never/depth").await;
    assert_eq!(status, StatusCode::NOT_FOUND);

    assert!(pop(&b, "implicit", "").await.is_empty());
    assert_eq!(depth(&b, "implicit").await["declared"], false);
    push_ok(&b, "implicit", &[json!(1)]).await;
    assert_eq!(depth(&b, "implicit").await["pending"], 1);
}

#[actix_rt::test]
async fn postgresql_holds_the_declaration_and_never_a_message() {
    let b = TestBroker::start().await;
    configure(
        &b,
        "declared",
        json!({"maxBytes": 4096, "ttlSeconds": 60, "windowBuffer": {"ms": 5, "count": 2}}),
    )
    .await;
    push_ok(&b, "declared", &[json!("secret-payload")]).await;
    let sql = b.sql().await;
    let row = sql
        .query_one(
            "SELECT max_bytes, ttl_seconds, policy, window_buffer::text FROM queen.ephemeral_queues \
             WHERE tenant = '' AND queue = 'declared'",
            &[],
        )
        .await
        .expect("the declaration is stored");
    assert_eq!(row.get::<_, i64>(0), 4096);
    assert_eq!(row.get::<_, Option<i64>>(1), Some(60));
    assert_eq!(row.get::<_, String>(2), "reject");
    let queues: i64 = sql
        .query_one(
            "SELECT count(*) FROM queen.queues WHERE name = 'declared'",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(queues, 0, "an ephemeral queue is no durable queue");
}
