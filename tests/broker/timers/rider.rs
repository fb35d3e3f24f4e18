//! The `timers` rider of `POST /api/v1/transaction`: committed with the bundle (its results
//! after the pushes' and the `kv` rider's, then fired), rolled back with it (a lost `once`
//! gate leaves no timer).

use std::time::Duration;

use serde_json::json;

use super::{drain, one, pending, schedule};
use crate::kv::put;
use crate::support::TestBroker;

fn push_op(queue: &str) -> serde_json::Value {
    json!({"type": "push", "items": [{"queue": queue, "payload": {"pushed": true}}]})
}

#[actix_rt::test]
async fn a_timers_rider_commits_with_the_bundle_and_its_timer_fires() {
    let b = TestBroker::start().await;
    one(&b, schedule("rq", "gone", json!(0), 60_000)).await;
    let (_, answer) = b
        .post(
            "/api/v1/transaction",
            &json!({"operations": [push_op("rq-side")],
                    "kv": [put("app", "k", json!(1))],
                    "timers": [schedule("rq", "t/1", json!({"from": "tx"}), 0),
                               {"op": "cancel", "queue": "rq", "timerKey": "gone"}]}),
        )
        .await;

    assert_eq!(answer["success"], true, "{answer}");
    let results = answer["results"].as_array().expect("results");
    assert_eq!(results.len(), 4, "{answer}");
    assert_eq!(results[1]["type"], "kv");
    assert_eq!(results[2]["type"], "timer");
    assert_eq!(results[2]["index"], 2);
    assert_eq!(results[2]["status"], "scheduled", "{answer}");
    assert_eq!(results[3]["status"], "cancelled", "{answer}");
    let got = drain(&b, "rq", Duration::from_secs(2)).await;
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(got[0]["data"], json!({"from": "tx"}));
    assert_eq!(got[0]["id"], results[2]["messageId"]);
}

#[actix_rt::test]
async fn a_bundle_that_rolls_back_takes_its_timers_with_it() {
    let b = TestBroker::start().await;
    let gate = json!({"op": "putIfAbsent", "ns": "gates", "key": "step", "value": 1,
                      "required": true, "forever": true});
    let first = json!({"operations": [], "kv": [gate.clone()],
                       "timers": [schedule("rb", "first", json!(1), 60_000)]});
    let second = json!({"operations": [push_op("rb-side")], "kv": [gate],
                        "timers": [schedule("rb", "second", json!(2), 0),
                                   {"op": "cancel", "queue": "rb", "timerKey": "first"}]});

    let (_, committed) = b.post("/api/v1/transaction", &first).await;
    let (_, lost) = b.post("/api/v1/transaction", &second).await;

    assert_eq!(committed["success"], true, "{committed}");
    assert_eq!(lost["success"], false, "{lost}");
    assert_eq!(lost["reason"], "kv_precondition", "{lost}");
    let (_, kept) = b.get("/api/v1/timers/rb/first").await;
    assert_eq!(
        kept["found"], true,
        "the rolled-back cancel took effect: {kept}"
    );
    let (_, never) = b.get("/api/v1/timers/rb/second").await;
    assert_eq!(never["found"], false, "{never}");
    assert_eq!(pending(&b).await, 1);
    assert!(drain(&b, "rb", Duration::from_millis(800)).await.is_empty());
}
