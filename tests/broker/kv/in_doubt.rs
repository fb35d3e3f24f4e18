//! A call whose statement reached PostgreSQL and whose answer never came back: the broker
//! cannot know whether it applied, so it answers 409 (which the client does not resend)
//! rather than a 5xx (which it does), and an `incr` cannot count twice. The cut is made by
//! a proxy between the broker and the database (`support/cut_proxy.rs`).

use reqwest::StatusCode;
use serde_json::json;

use crate::support::cut_proxy::{Cut, CutProxy};
use crate::support::{postgres, TestBroker};

/// The counter's value as stored, read past the proxy.
async fn stored(pg: &tokio_postgres::Config, key: &str) -> Option<String> {
    let (client, connection) = pg
        .connect(tokio_postgres::NoTls)
        .await
        .expect("connect directly");
    tokio::spawn(connection);
    client
        .query_opt(
            "SELECT value::text FROM queen.kv WHERE namespace = 'app' AND key = $1",
            &[&key],
        )
        .await
        .expect("read the key")
        .map(|row| row.get(0))
}

#[actix_rt::test]
async fn a_kv_call_cut_after_it_was_sent_answers_409_outcome_unknown() {
    let pg = postgres::fresh_installed_database().await;
    let proxy = CutProxy::start(
        &pg,
        Cut {
            marker: b"in-doubt-counter",
            then: None,
        },
    )
    .await;
    let b = TestBroker::start_on(proxy.config(), &[]).await;

    let (status, body) = b
        .post(
            "/api/v1/kv",
            &json!({"operations": [{"op": "incr", "ns": "app", "key": "in-doubt-counter",
                                    "forever": true}]}),
        )
        .await;

    assert!(
        proxy.fired(),
        "the proxy never saw the call: {status} {body}"
    );
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert_eq!(
        (&body["error"], &body["reason"]),
        (&json!("kv_outcome_unknown"), &json!("connection_lost"))
    );
    // It did apply: a 5xx here would have had the client count it again.
    assert_eq!(stored(&pg, "in-doubt-counter").await.as_deref(), Some("1"));
    let (status, after) = b
        .post(
            "/api/v1/kv",
            &json!({"operations": [{"op": "get", "ns": "app", "key": "in-doubt-counter"}]}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "the pool recovers: {after}");
    assert_eq!(after["results"][0]["value"], 1);
}

#[actix_rt::test]
async fn a_bundle_writing_keys_whose_commit_is_cut_answers_409_not_a_5xx() {
    let pg = postgres::fresh_installed_database().await;
    let proxy = CutProxy::start(
        &pg,
        Cut {
            marker: b"in-doubt-runs",
            then: Some(b"COMMIT"),
        },
    )
    .await;
    let b = TestBroker::start_on(proxy.config(), &[]).await;

    let (status, body) = b
        .post(
            "/api/v1/transaction",
            &json!({"operations": [{"type": "push", "items": [{"queue": "doubt", "payload": 1}]}],
                    "kv": [{"op": "incr", "ns": "app", "key": "in-doubt-runs",
                            "forever": true}]}),
        )
        .await;

    assert!(proxy.fired(), "the proxy never saw the commit");
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert!(
        body["error"]
            .as_str()
            .is_some_and(|e| e.contains("outcome is unknown")),
        "{body}"
    );
    assert_eq!(stored(&pg, "in-doubt-runs").await.as_deref(), Some("1"));
}
