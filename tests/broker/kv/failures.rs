//! A database failure mid-batch: the statement is rolled back whole, the answer is a 503
//! with `Retry-After` in the KV envelope, and the client's resend counts the `incr` once.

use reqwest::StatusCode;
use serde_json::json;

use super::{get, one};
use crate::support::TestBroker;

#[actix_rt::test]
async fn a_batch_the_database_refuses_answers_503_and_its_resend_counts_once() {
    let b = TestBroker::start().await;
    let sql = b.sql().await;
    // The second op's write fails inside the statement, after the incr ran.
    sql.batch_execute(
        "ALTER TABLE queen.kv ADD CONSTRAINT refuse_poison CHECK (value <> '\"poison\"')",
    )
    .await
    .expect("add the constraint");
    let call = json!({"operations": [
        {"op": "incr", "ns": "app", "key": "n", "forever": true},
        {"op": "put", "ns": "app", "key": "k", "value": "poison", "forever": true},
    ]});
    let response = b
        .http
        .post(b.url("/api/v1/kv"))
        .json(&call)
        .send()
        .await
        .expect("reaches the broker");
    let status = response.status();
    let retry_after = response.headers().get("retry-after").cloned();
    let body: serde_json::Value = response.json().await.expect("a JSON body");

    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{body}");
    assert_eq!(
        retry_after.as_ref().and_then(|v| v.to_str().ok()),
        Some("1")
    );
    assert_eq!(
        (&body["error"], &body["reason"]),
        (&json!("unavailable"), &json!("database"))
    );
    assert_eq!(
        one(&b, get("app", "n")).await["found"],
        false,
        "the incr was undone"
    );

    sql.batch_execute("ALTER TABLE queen.kv DROP CONSTRAINT refuse_poison")
        .await
        .expect("drop the constraint");
    let (status, resent) = b.post("/api/v1/kv", &call).await;
    assert_eq!(status, StatusCode::OK, "{resent}");
    assert_eq!(one(&b, get("app", "n")).await["value"], 1, "counted once");
}
