//! The push spool: pushes answered `buffered` while PostgreSQL is away or while push
//! maintenance is on, and stored later, each once, in order per partition. The SIGKILL
//! test runs real broker processes and lives with them (`nodes::spool_kill`).

mod direct_appends;
mod failed_write;
mod full;
mod large;
mod load;
mod maintenance;
mod outage;

use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::support::{eventually, read};

/// Numbered messages `{"n": n}` for one partition, the even ones with a transaction id of
/// their own (`t<n>`), the odd ones without (the broker mints one).
pub fn items(queue: &str, partition: &str, numbers: std::ops::Range<u64>) -> Vec<Value> {
    numbers
        .map(|n| match n % 2 {
            0 => json!({"queue": queue, "partition": partition, "payload": {"n": n},
                        "transactionId": format!("t{n}")}),
            _ => json!({"queue": queue, "partition": partition, "payload": {"n": n}}),
        })
        .collect()
}

/// POSTs a push; answers the status and the body.
pub async fn push(http: &reqwest::Client, base: &str, items: &[Value]) -> (StatusCode, Value) {
    let response = http
        .post(format!("{base}/api/v1/push"))
        .json(&json!({ "items": items }))
        .send()
        .await
        .expect("the push reaches the broker");
    read(response).await
}

/// Asserts every item of a push answer has `status`.
pub fn assert_all(status: &str, answer: &Value) {
    let answers = answer.as_array().expect("a push answers an array");
    for a in answers {
        assert_eq!(a["status"], status, "{answer}");
        if status == "buffered" {
            assert!(
                a["transactionId"].is_string() && a["messageId"].is_string(),
                "{a}"
            );
        }
    }
}

/// A number of `/metrics`' `spool` object.
pub async fn spool_metric(http: &reqwest::Client, base: &str, name: &str) -> i64 {
    let response = http
        .get(format!("{base}/metrics"))
        .send()
        .await
        .expect("metrics");
    let (_, body) = read(response).await;
    body["spool"][name]
        .as_i64()
        .unwrap_or_else(|| panic!("no spool.{name} in {body}"))
}

/// Waits until the spool holds nothing more to replay.
pub async fn wait_replayed(http: &reqwest::Client, base: &str, within: Duration) {
    let done = eventually(within, || async {
        (spool_metric(http, base, "pendingRecords").await == 0).then_some(())
    })
    .await;
    assert!(
        done.is_some(),
        "the spool still holds {} records after {within:?}",
        spool_metric(http, base, "pendingRecords").await
    );
}

/// Every message of one partition, in stored order, read with auto-ack pops until empty.
pub async fn read_partition(
    http: &reqwest::Client,
    base: &str,
    queue: &str,
    partition: &str,
) -> Vec<u64> {
    let url =
        format!("{base}/api/v1/pop/queue/{queue}/partition/{partition}?batch=500&autoAck=true");
    let mut got = Vec::new();
    loop {
        let (status, body) = read(http.get(&url).send().await.expect("pop")).await;
        match status {
            StatusCode::NO_CONTENT => return got,
            StatusCode::OK => {}
            other => panic!("pop answered {other}: {body}"),
        }
        let messages = body["messages"].as_array().expect("messages");
        if messages.is_empty() {
            return got;
        }
        got.extend(
            messages
                .iter()
                .map(|m| m["data"]["n"].as_u64().expect("numbered")),
        );
    }
}
