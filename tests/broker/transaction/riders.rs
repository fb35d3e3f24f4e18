//! The `kv` rider: KV ops in the same PostgreSQL transaction as the bundle's pushes and
//! acks. Results follow the operations' slots; a lost `required` op answers 200
//! `{success: false, reason: "kv_precondition", failedIndex, kvReason, version, value}`
//! in the flat index space with nothing applied; a refused push or ack undoes the rider's
//! writes; a lock-style guard (`check` with `expect`) fences a bundle; concurrent `once`
//! gates let exactly one bundle through.

use futures_util::future::join_all;
use reqwest::StatusCode;
use serde_json::{json, Value};

use super::{ack_op, assert_rolled_back, bundle, push_op, segments_of};
use crate::kv::{get, one, put};
use crate::support::fixtures::numbers;
use crate::support::{payloads, TestBroker};

/// `tx.once(ns, key)` as the client sends it.
fn once(ns: &str, key: &str) -> Value {
    json!({"op": "putIfAbsent", "ns": ns, "key": key, "value": true, "forever": true,
           "required": true})
}

#[actix_rt::test]
async fn kv_ops_commit_with_the_pushes_and_answer_after_their_slots() {
    let b = TestBroker::start().await;

    let answer = bundle(
        &b,
        &json!({
            "operations": [push_op("rider-dst", &numbers(0..2))],
            "kv": [
                put("app", "seen", json!({"n": 1})),
                {"op": "incr", "ns": "app", "key": "count", "delta": 5, "forever": true},
                get("app", "seen"),
            ],
        }),
    )
    .await;

    assert_eq!(answer["success"], true, "{answer}");
    let results = answer["results"].as_array().expect("results");
    assert_eq!(results.len(), 5, "{answer}");
    assert_eq!(results[0]["type"], "push");
    assert_eq!(results[1]["type"], "push");
    assert_eq!(
        (
            &results[2]["index"],
            &results[2]["type"],
            &results[2]["applied"]
        ),
        (&json!(2), &json!("kv"), &json!(true)),
        "{answer}"
    );
    assert_eq!(results[3]["value"], 5, "{answer}");
    assert_eq!(
        results[4]["found"], true,
        "reads see the rider's writes: {answer}"
    );
    assert_eq!(results[4]["value"], json!({"n": 1}));
    assert_eq!(one(&b, get("app", "count")).await["value"], 5);
    let popped = b.pop_messages("/api/v1/pop/queue/rider-dst?batch=10").await;
    assert_eq!(payloads(&popped), numbers(0..2));
}

#[actix_rt::test]
async fn a_lost_once_gate_answers_kv_precondition_and_applies_nothing() {
    let b = TestBroker::start().await;
    let first = bundle(
        &b,
        &json!({"operations": [push_op("gate-first", &numbers(0..1))],
                "kv": [once("gates", "order-7")]}),
    )
    .await;
    assert_eq!(first["success"], true, "{first}");
    let gate = one(&b, get("gates", "order-7")).await;

    // The same step again: the gate holds, so neither its writes nor its push happen.
    let again = bundle(
        &b,
        &json!({"operations": [push_op("gate-again", &numbers(0..3))],
        "kv": [
            {"op": "incr", "ns": "gates", "key": "runs", "forever": true},
            once("gates", "order-7"),
        ]}),
    )
    .await;

    assert_eq!(again["success"], false, "{again}");
    assert_eq!(again["reason"], "kv_precondition", "{again}");
    assert_eq!(
        again["failedIndex"],
        3 + 1,
        "flat: 3 pushed items, then rider op 1"
    );
    assert_eq!(again["kvReason"], "exists");
    assert_eq!(again["version"], gate["version"]);
    assert_eq!(again["value"], true);
    assert!(again.get("results").is_none(), "{again}");
    assert_eq!(segments_of(&b, "gate-again").await, 0);
    assert_eq!(one(&b, get("gates", "runs")).await["found"], false);
}

#[actix_rt::test]
async fn a_refused_ack_undoes_the_riders_writes() {
    let b = TestBroker::start().await;
    let (status, _) = b
        .post(
            "/api/v1/push",
            &json!({"items": [{"queue": "rider-src", "payload": 1}]}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED);
    let popped = b.pop_messages("/api/v1/pop/queue/rider-src").await;
    let mut stale = ack_op(&popped[0], "completed");
    stale["leaseId"] = json!("not-the-lease");

    let answer = bundle(
        &b,
        &json!({"operations": [push_op("rider-out", &numbers(0..1)), stale],
                "kv": [put("app", "step", json!("done"))]}),
    )
    .await;

    assert_rolled_back(&b, &answer, 1, "rider-out").await;
    assert_eq!(one(&b, get("app", "step")).await["found"], false);
}

/// What `client.transaction().guard(lock)` sends: a `check` of the permit's row at its
/// token, `required`. A holder whose token moved on (a renew, or a new holder) commits
/// nothing, and learns the row's current value (its owner) from the answer.
#[actix_rt::test]
async fn a_guard_at_a_stale_version_fences_the_bundle() {
    let b = TestBroker::start().await;
    let permit = one(&b, put("queen-locks", "job#0", json!({"owner": "a"}))).await;
    let guard = |version: &Value| {
        json!({"op": "check", "ns": "queen-locks", "key": "job#0", "expect": version,
               "required": true})
    };
    let held = bundle(
        &b,
        &json!({"operations": [push_op("guarded", &numbers(0..1))],
                "kv": [guard(&permit["version"])]}),
    )
    .await;
    assert_eq!(held["success"], true, "{held}");

    let moved = one(&b, put("queen-locks", "job#0", json!({"owner": "b"}))).await;
    let late = bundle(
        &b,
        &json!({"operations": [push_op("guarded", &numbers(1..2))],
                "kv": [guard(&permit["version"])]}),
    )
    .await;

    assert_eq!(late["success"], false, "{late}");
    assert_eq!(late["failedIndex"], 1, "{late}");
    assert_eq!(late["kvReason"], "version");
    assert_eq!(late["version"], moved["version"]);
    assert_eq!(late["value"], json!({"owner": "b"}));
    let popped = b.pop_messages("/api/v1/pop/queue/guarded?batch=10").await;
    assert_eq!(payloads(&popped), numbers(0..1));
}

#[actix_rt::test]
async fn a_malformed_kv_rider_answers_400_and_changes_nothing() {
    let b = TestBroker::start().await;
    for rider in [
        json!({"op": "put", "ns": "Bad NS", "key": "k", "value": 1, "forever": true}),
        json!({"op": "nope", "ns": "app", "key": "k"}),
        json!("not an op"),
        json!({"op": "getPrefix", "ns": "app", "prefix": "k"}),
    ] {
        let (status, body) = b
            .post(
                "/api/v1/transaction",
                &json!({"operations": [push_op("bad-rider", &numbers(0..1))],
                        "kv": [put("app", "k", json!(1)), rider]}),
            )
            .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
        assert!(
            body["error"]
                .as_str()
                .is_some_and(|e| e.starts_with("kv: ")),
            "{body}"
        );
    }
    let (status, body) = b
        .post(
            "/api/v1/transaction",
            &json!({"operations": [], "kv": {"op": "get"}}),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert_eq!(segments_of(&b, "bad-rider").await, 0);
    assert_eq!(one(&b, get("app", "k")).await["found"], false);
}

#[actix_rt::test]
async fn a_bundle_of_kv_ops_alone_commits_and_a_malformed_timers_rider_is_refused_whole() {
    let b = TestBroker::start().await;

    let alone = bundle(&b, &json!({"operations": [], "kv": [once("solo", "x")]})).await;
    let (status, timers) = b
        .post(
            "/api/v1/transaction",
            &json!({"operations": [push_op("timer-dst", &numbers(0..1))],
                    "kv": [put("solo", "y", json!(1))],
                    "timers": [{"op": "cancel"}]}),
        )
        .await;

    assert_eq!(alone["success"], true, "{alone}");
    assert_eq!(alone["results"][0]["applied"], true, "{alone}");
    assert_eq!(one(&b, get("solo", "x")).await["found"], true);
    assert_eq!(status, StatusCode::BAD_REQUEST, "{timers}");
    assert!(
        timers["error"]
            .as_str()
            .unwrap_or("")
            .starts_with("timers:"),
        "{timers}"
    );
    assert_eq!(segments_of(&b, "timer-dst").await, 0);
    assert_eq!(one(&b, get("solo", "y")).await["found"], false);
}

/// Twenty redeliveries of one step race, each gated by the same `once` key: exactly one
/// commits its push, every other answers `kv_precondition`, and the queue holds one
/// message.
#[actix_rt::test]
async fn concurrent_bundles_behind_one_once_gate_commit_exactly_once() {
    let b = TestBroker::start().await;
    let body = |n: usize| {
        json!({"operations": [push_op("once-dst", &[json!(n)])],
               "kv": [once("gates", "step-1")]})
    };

    let answers = join_all((0..20).map(|n| {
        let b = &b;
        let body = body(n);
        async move { bundle(b, &body).await }
    }))
    .await;

    let won: Vec<&Value> = answers.iter().filter(|a| a["success"] == true).collect();
    assert_eq!(won.len(), 1, "{answers:?}");
    for lost in answers.iter().filter(|a| a["success"] != true) {
        assert_eq!(lost["reason"], "kv_precondition", "{lost}");
        assert_eq!(lost["kvReason"], "exists", "{lost}");
    }
    let popped = b.pop_messages("/api/v1/pop/queue/once-dst?batch=50").await;
    assert_eq!(popped.len(), 1, "{popped:?}");
    assert_eq!(segments_of(&b, "once-dst").await, 1);
}
