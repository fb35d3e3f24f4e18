//! A database failure mid-batch: the statement is rolled back whole, the answer is a 503
//! with `Retry-After` in the KV envelope, and the client's resend counts the `incr` once.

use reqwest::StatusCode;
use serde_json::json;

use super::{get, install_kv_fault, one};
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

/// With one permit of database work (a pool of one) held by a slow call, another call
/// waits the pool timeout and answers 429 `overloaded` with `Retry-After`, applying
/// nothing; once the slow call is done, the same call goes through.
#[actix_rt::test]
async fn a_call_over_the_limit_of_database_work_answers_429_and_applies_nothing() {
    let b =
        TestBroker::start_with(&[("DB_POOL_SIZE", "1"), ("QUEEN_POOL_TIMEOUT_MS", "300")]).await;
    install_kv_fault(
        &b,
        "CREATE FUNCTION public.slow_kv() RETURNS trigger LANGUAGE plpgsql AS $$ \
         BEGIN IF NEW.namespace = 'slow' THEN PERFORM pg_sleep(2); END IF; \
         RETURN NEW; END $$",
        "CREATE TRIGGER slow_kv BEFORE INSERT ON queen.kv \
           FOR EACH ROW EXECUTE FUNCTION public.slow_kv()",
    )
    .await;
    let slow_call = json!({"operations": [{"op": "put", "ns": "slow", "key": "k", "value": 1,
                                           "forever": true}]});
    let slow = b.post("/api/v1/kv", &slow_call);
    let refused = async {
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
        let response = b
            .http
            .post(b.url("/api/v1/kv"))
            .json(
                &json!({"operations": [{"op": "incr", "ns": "app", "key": "n",
                                          "forever": true}]}),
            )
            .send()
            .await
            .expect("reaches the broker");
        let retry_after = response.headers().get("retry-after").cloned();
        (
            response.status(),
            retry_after,
            response.json::<serde_json::Value>().await,
        )
    };

    let ((slow_status, _), (status, retry_after, body)) = tokio::join!(slow, refused);

    let body = body.expect("a JSON body");
    assert_eq!(slow_status, StatusCode::OK);
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS, "{body}");
    assert_eq!(
        retry_after.as_ref().and_then(|v| v.to_str().ok()),
        Some("1")
    );
    assert_eq!(
        (&body["error"], &body["reason"]),
        (&json!("overloaded"), &json!("busy"))
    );
    assert_eq!(
        one(&b, get("app", "n")).await["found"],
        false,
        "nothing applied"
    );
}
