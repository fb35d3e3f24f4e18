//! What one push request may hold and create (`QUEEN_MAX_PUSH_MESSAGES`,
//! `QUEEN_MAX_PUSH_PARTITIONS`): over a cap, in a JSON or `QPB1` push or a transaction, is
//! a 400 naming the setting, and nothing is created.

use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::support::qpb1::{self, Item};
use crate::support::TestBroker;

const CAPS: &[(&str, &str)] = &[
    ("QUEEN_MAX_PUSH_MESSAGES", "5"),
    ("QUEEN_MAX_PUSH_PARTITIONS", "3"),
];

fn items(queue: &str, partitions: &[&str]) -> Value {
    let items: Vec<Value> = partitions
        .iter()
        .map(|p| json!({"queue": queue, "partition": p, "payload": {"p": p}}))
        .collect();
    json!({ "items": items })
}

async fn assert_refused_naming(
    b: &TestBroker,
    status: StatusCode,
    body: &Value,
    setting: &str,
    queue: &str,
) {
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    let text = body["error"].as_str().unwrap_or("");
    assert!(text.contains(setting), "{body}");
    let (status, _) = b.get(&format!("/api/v1/resources/queues/{queue}")).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{queue} was created");
}

/// A JSON push one message over the cap is refused whole; one at the cap is stored.
#[actix_rt::test]
async fn a_json_push_over_the_message_cap_is_a_400_that_creates_nothing() {
    let b = TestBroker::start_with(CAPS).await;

    let (over, over_body) = b
        .post(
            "/api/v1/push",
            &items("caps-json", &["a", "a", "a", "a", "a", "a"]),
        )
        .await;
    let (at, at_body) = b
        .post(
            "/api/v1/push",
            &items("caps-json-ok", &["a", "a", "b", "b", "c"]),
        )
        .await;

    assert_refused_naming(&b, over, &over_body, "QUEEN_MAX_PUSH_MESSAGES", "caps-json").await;
    assert_eq!(at, StatusCode::CREATED, "{at_body}");
    assert_eq!(at_body.as_array().map(Vec::len), Some(5), "{at_body}");
}

/// A JSON push to one partition more than the cap is refused whole.
#[actix_rt::test]
async fn a_json_push_over_the_partition_cap_is_a_400_that_creates_nothing() {
    let b = TestBroker::start_with(CAPS).await;

    let (status, body) = b
        .post("/api/v1/push", &items("caps-parts", &["a", "b", "c", "d"]))
        .await;

    assert_refused_naming(&b, status, &body, "QUEEN_MAX_PUSH_PARTITIONS", "caps-parts").await;
}

/// A `QPB1` body whose groups reach more partitions, or hold more messages, than the caps
/// is refused whole.
#[actix_rt::test]
async fn a_binary_push_over_either_cap_is_a_400_that_creates_nothing() {
    let b = TestBroker::start_with(CAPS).await;
    let one = || {
        vec![Item {
            txn: "",
            payload: "1",
        }]
    };
    let parts = qpb1::plain(
        0,
        &[
            ("caps-bin", "a", one()),
            ("caps-bin", "b", one()),
            ("caps-bin", "c", one()),
            ("caps-bin", "d", one()),
        ],
    );
    let many = qpb1::plain(
        0,
        &[(
            "caps-bin",
            "a",
            (0..6)
                .map(|_| Item {
                    txn: "",
                    payload: "1",
                })
                .collect(),
        )],
    );

    let (status, body) = b
        .post_raw("/api/v1/push", "application/octet-stream", parts)
        .await;
    assert_refused_naming(&b, status, &body, "QUEEN_MAX_PUSH_PARTITIONS", "caps-bin").await;
    let (status, body) = b
        .post_raw("/api/v1/push", "application/octet-stream", many)
        .await;
    assert_refused_naming(&b, status, &body, "QUEEN_MAX_PUSH_MESSAGES", "caps-bin").await;
}

/// A transaction's pushes count together against the caps of one push.
#[actix_rt::test]
async fn a_transaction_whose_pushes_together_pass_the_cap_is_a_400_that_creates_nothing() {
    let b = TestBroker::start_with(CAPS).await;
    let push = |ps: &[&str]| json!({"type": "push", "items": items("caps-txn", ps)["items"]});

    let (status, body) = b
        .post(
            "/api/v1/transaction",
            &json!({"operations": [push(&["a", "a", "a"]), push(&["a", "a", "a"])]}),
        )
        .await;

    assert_refused_naming(&b, status, &body, "QUEEN_MAX_PUSH_MESSAGES", "caps-txn").await;
}
