//! Delivery: each group sees every message (fan-out) while one group's consumers share
//! them; a lease that runs out redelivers with `attempts + 1`; failed and retry acks
//! redeliver at once; past `retryLimit` a message is dropped and counted; `autoAck` leaves
//! nothing to ack; ack answers `acked`, `redelivered`, `stale` and `unknown`.

use std::time::Duration;

use serde_json::json;

use super::{ack, configure, depth, payloads, pop, push_ok};
use crate::support::TestBroker;

#[actix_rt::test]
async fn every_group_sees_every_message_and_one_group_shares_them() {
    let b = TestBroker::start().await;
    push_ok(&b, "fan", &[json!(1), json!(2), json!(3), json!(4)]).await;
    let a = pop(&b, "fan", "group=a&batch=10").await;
    let first = pop(&b, "fan", "group=w&batch=2").await;
    let second = pop(&b, "fan", "group=w&batch=2").await;
    assert_eq!(payloads(&a), [json!(1), json!(2), json!(3), json!(4)]);
    assert_eq!(payloads(&first), [json!(1), json!(2)]);
    assert_eq!(payloads(&second), [json!(3), json!(4)]);
    assert!(pop(&b, "fan", "group=w").await.is_empty());
    assert_eq!(
        payloads(&pop(&b, "fan", "batch=10").await).len(),
        4,
        "queue mode is a group too"
    );
}

#[actix_rt::test]
async fn an_expired_lease_redelivers_with_one_more_attempt() {
    let b = TestBroker::start().await;
    configure(&b, "lease", json!({"leaseSeconds": 1})).await;
    push_ok(&b, "lease", &[json!("x")]).await;
    let first = pop(&b, "lease", "").await;
    assert_eq!(first[0]["attempts"], 1);
    assert!(pop(&b, "lease", "").await.is_empty(), "leased, not yet due");
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let again = pop(&b, "lease", "").await;
    assert_eq!(again[0]["payload"], "x");
    assert_eq!(again[0]["attempts"], 2);
    assert_eq!(ack(&b, "lease", None, &first, "completed").await, ["acked"]);
    assert_eq!(
        ack(&b, "lease", None, &first, "completed").await,
        ["stale"],
        "acked by its only group, it is no longer held"
    );
    assert_eq!(depth(&b, "lease").await["pending"], 0);
}

#[actix_rt::test]
async fn failed_acks_redeliver_until_the_retry_limit_then_drop() {
    let b = TestBroker::start().await;
    configure(&b, "retry", json!({"retryLimit": 2})).await;
    push_ok(&b, "retry", &[json!("flaky")]).await;
    let mut seen = Vec::new();
    for _ in 0..3 {
        let m = pop(&b, "retry", "").await;
        assert_eq!(m.len(), 1);
        seen.push(m[0]["attempts"].clone());
        let outcome = ack(&b, "retry", None, &m, "failed").await;
        let expected = if seen.len() < 3 {
            "redelivered"
        } else {
            "acked"
        };
        assert_eq!(outcome, [expected]);
    }
    assert_eq!(seen, [json!(1), json!(2), json!(3)]);
    assert!(pop(&b, "retry", "").await.is_empty());
    let d = depth(&b, "retry").await;
    assert_eq!(d["retriesExhausted"], 1, "{d}");
    assert_eq!(d["pending"], 0, "{d}");
}

#[actix_rt::test]
async fn auto_ack_commits_at_delivery() {
    let b = TestBroker::start().await;
    configure(&b, "auto", json!({"leaseSeconds": 1})).await;
    push_ok(&b, "auto", &[json!(1), json!(2)]).await;
    let got = pop(&b, "auto", "autoAck=true&batch=10").await;
    assert_eq!(payloads(&got), [json!(1), json!(2)]);
    tokio::time::sleep(Duration::from_millis(1100)).await;
    assert!(
        pop(&b, "auto", "batch=10").await.is_empty(),
        "nothing comes back"
    );
    assert_eq!(
        ack(&b, "auto", None, &got, "completed").await,
        ["stale", "stale"]
    );
    assert_eq!(depth(&b, "auto").await["pending"], 0);
}

#[actix_rt::test]
async fn acks_of_other_incarnations_and_junk_ids_are_stale_or_unknown() {
    let b = TestBroker::start().await;
    push_ok(&b, "ids", &[json!(1), json!(2)]).await;
    let got = pop(&b, "ids", "batch=1").await;
    let other = json!({"id": "00000000000000ff.1.0"});
    let junk = json!({"id": "not-an-id"});
    let unseen = {
        let id = got[0]["id"].as_str().unwrap();
        let head = id.rsplit_once('.').unwrap().0;
        json!({"id": format!("{head}.1")})
    };
    let outcomes = ack(
        &b,
        "ids",
        None,
        &[other, junk, unseen, got[0].clone()],
        "completed",
    )
    .await;
    assert_eq!(outcomes, ["stale", "unknown", "unknown", "acked"]);
    let (status, reset) = b
        .post("/api/v1/ephemeral/reset", &json!({"queue": "ids"}))
        .await;
    assert!(status.is_success(), "{reset}");
    assert_eq!(ack(&b, "ids", None, &got, "completed").await, ["stale"]);
}
