//! Refused input answers 400 in the `{error, reason, detail}` envelope and changes nothing,
//! even when the call's earlier ops were sound.

use reqwest::StatusCode;
use serde_json::{json, Value};

use super::{cancel, pending, schedule};
use crate::support::TestBroker;

#[actix_rt::test]
async fn refused_calls_answer_400_with_a_reason_and_change_nothing() {
    let b = TestBroker::start().await;
    let sound = schedule("bq", "sound", json!(1), 60_000);
    let with = |extra: Value| {
        let mut op = schedule("bq", "other", json!(1), 60_000);
        if let (Some(op), Some(extra)) = (op.as_object_mut(), extra.as_object()) {
            op.extend(extra.clone());
        }
        json!([sound.clone(), op])
    };
    let many: Vec<Value> = (0..257)
        .map(|k| schedule("bq", &format!("k{k}"), json!(k), 60_000))
        .collect();
    let cases = [
        (with(json!({"messageId": "x"})), "server_owned"),
        (
            with(json!({"deliverAt": "2030-01-01T00:00:00Z"})),
            "server_owned",
        ),
        (with(json!({"_hidden": 1})), "server_owned"),
        (with(json!({"payload": "***"})), "payload"),
        (with(json!({"payload": "bm90IGpzb24="})), "payload"),
        (with(json!({"delayMs": "soon"})), "delay"),
        (with(json!({"timerKey": ""})), "timer_key"),
        (with(json!({"queue": "a/b"})), "queue"),
        (with(json!({"op": "fire"})), "op"),
        (with(json!({"timerKey": "sound"})), "duplicate_key"),
        (json!(many), "too_many_ops"),
        (json!("nope"), "operations"),
    ];
    for (ops, reason) in cases {
        let (status, body) = b
            .post("/api/v1/timers", &json!({ "operations": ops }))
            .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{reason}: {body}");
        assert_eq!(body["error"], "bad_request", "{body}");
        assert_eq!(body["reason"], reason, "{body}");
    }
    let (status, body) = b.post("/api/v1/timers", &json!({"ops": []})).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    let (status, body) = cancel(&b, "bq", "", None).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert_eq!(body["reason"], "timer_key", "{body}");
    let (status, body) = b
        .post(
            "/api/v1/transaction",
            &json!({"operations": [], "timers": [with(json!({"attempts": 1}))[1]]}),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");

    assert_eq!(pending(&b).await, 0);
}
