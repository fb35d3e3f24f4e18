//! `state/get` filters: `keys`, a literal `key_prefix` (`%` and `_` are plain characters),
//! and `ripe_at_or_before`, which leaves out rows whose `windowEnd` is missing, not a
//! number, or later.

use reqwest::StatusCode;
use serde_json::json;

use super::register::partition;
use super::{keys, query_id, state};
use crate::support::TestBroker;

#[actix_rt::test]
async fn keys_literal_prefix_and_ripe_filters() {
    let b = TestBroker::start().await;
    b.push("src", "Default", &[json!(1)]).await;
    let id = query_id(&b, "q", "src").await;
    let pid = partition(&b).await;
    let ops = json!([
        {"type": "upsert", "key": "a%b", "value": {"windowEnd": 100}},
        {"type": "upsert", "key": "a%bc", "value": {"windowEnd": 200}},
        {"type": "upsert", "key": "aXb", "value": {"windowEnd": 50}},
        {"type": "upsert", "key": "a_1", "value": {"windowEnd": "100"}},
        {"type": "upsert", "key": "abc", "value": {"other": 1}},
        {"type": "upsert", "key": "z", "value": 7},
        {"type": "upsert", "key": "gone", "value": 1},
        {"type": "delete", "key": "gone"},
    ]);
    let (s, body) = b
        .post(
            "/streams/v1/cycle",
            &json!({"query_id": id, "partition_id": pid, "consumer_group": "streams.q",
                    "state_ops": ops, "ack": null}),
        )
        .await;
    assert_eq!(
        (s, &body["success"]),
        (StatusCode::OK, &json!(true)),
        "{body}"
    );

    let all = state(&b, &id, &pid, json!({})).await;
    assert_eq!(keys(&all), ["a%b", "a%bc", "aXb", "a_1", "abc", "z"]);
    let some = state(&b, &id, &pid, json!({"keys": ["z", "abc", "nope"]})).await;
    assert_eq!(keys(&some), ["abc", "z"]);
    assert_eq!(some[1]["value"], json!(7));
    // `%` and `_` are literal: "a%" is not "a anything", "a_" is not "a one character".
    let percent = state(&b, &id, &pid, json!({"key_prefix": "a%"})).await;
    assert_eq!(keys(&percent), ["a%b", "a%bc"]);
    let underscore = state(&b, &id, &pid, json!({"key_prefix": "a_"})).await;
    assert_eq!(keys(&underscore), ["a_1"]);
    // Only numeric windowEnd <= 100: not the string one, not the missing one, not 200.
    let ripe = state(&b, &id, &pid, json!({"ripe_at_or_before": 100})).await;
    assert_eq!(keys(&ripe), ["a%b", "aXb"]);
    let both = state(
        &b,
        &id,
        &pid,
        json!({"key_prefix": "a%", "ripe_at_or_before": 100}),
    )
    .await;
    assert_eq!(keys(&both), ["a%b"]);
    // Another partition id sees none of it.
    let other = (pid.parse::<i64>().expect("id") + 1000).to_string();
    assert!(state(&b, &id, &other, json!({})).await.is_empty());
}
