//! Input the property-based API run (`bench/schemathesis.sh`) found answered 500: values
//! PostgreSQL cannot store. Each must be a 400 with a JSON error that changes nothing.

use reqwest::StatusCode;
use serde_json::json;

use crate::support::TestBroker;

/// An option beyond what its column holds is refused by name, before any SQL runs.
#[actix_rt::test]
async fn an_option_too_large_for_its_column_is_a_400_naming_it() {
    let b = TestBroker::start().await;

    let (status, body) = b
        .post(
            "/api/v1/configure",
            &json!({"queue": "big", "options": {"retentionSeconds": 3_153_599_999_i64}}),
        )
        .await;

    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert!(
        body["error"]
            .as_str()
            .unwrap_or("")
            .contains("retentionSeconds"),
        "{body}"
    );
    let (status, _) = b.get("/api/v1/resources/queues/big").await;
    assert_eq!(status, StatusCode::NOT_FOUND, "nothing was created");
}

/// Text with a NUL character (PostgreSQL text cannot hold one) is a 400 wherever it lands.
#[actix_rt::test]
async fn text_with_a_nul_character_is_a_400_not_a_500() {
    let b = TestBroker::start().await;
    b.push("nul", "p", &[json!(1)]).await;
    let got = b.pop_messages("/api/v1/pop/queue/nul?autoAck=true").await;
    let requests = [
        (
            "/api/v1/configure",
            json!({"queue": "nul", "namespace": "a\u{0}b"}),
        ),
        (
            "/api/v1/traces",
            json!({"transactionId": got[0]["transactionId"],
            "partitionId": got[0]["partitionId"], "eventType": "seen", "workerId": "w\u{0}"}),
        ),
        (
            "/api/v1/push",
            json!({"items": [{"queue": "nul", "payload": 1, "transactionId": "t\u{0}"}]}),
        ),
    ];
    for (path, body) in requests {
        let (status, answer) = b.post(path, &body).await;

        assert!(
            status.is_client_error(),
            "{path} answered {status}: {answer}"
        );
        assert!(answer["error"].is_string(), "{path}: {answer}");
    }
    let (_, queue) = b.get("/api/v1/resources/queues/nul").await;
    assert_eq!(queue["namespace"], serde_json::Value::Null, "{queue}");
}
