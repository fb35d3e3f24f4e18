//! The fire loop: a timer becomes exactly one message, never before its deliverAt, with the
//! promised message id, its txn as transactionId, its partition and its payload, in a
//! queue the fire creates; a fire that cannot push backs off and keeps the timer.

use std::time::Duration;

use serde_json::json;

use super::{drain, one, pending, schedule};
use crate::support::{eventually, TestBroker};

#[actix_rt::test]
async fn a_timer_fires_once_not_before_deliver_at_with_the_promised_id_txn_and_partition() {
    let b = TestBroker::start().await;
    let mut op = schedule("fired", "k/1", json!({"x": 1}), 800);
    op["partition"] = json!("p3");
    let promised = one(&b, op).await;
    let deliver_at =
        chrono::DateTime::parse_from_rfc3339(promised["deliverAt"].as_str().expect("deliverAt"))
            .expect("an instant");

    let early = b.pop_messages("/api/v1/pop/queue/fired?wait=false").await;
    let got = b
        .pop_messages("/api/v1/pop/queue/fired?batch=10&wait=true&timeout=5000")
        .await;
    let seen_at = chrono::Utc::now();
    b.ack_all(&got, "completed", None).await;
    let more = drain(&b, "fired", Duration::from_millis(1200)).await;

    assert!(early.is_empty(), "delivered before deliverAt: {early:?}");
    assert_eq!(got.len(), 1, "{got:?}");
    let m = &got[0];
    assert_eq!(m["id"], promised["messageId"], "{m}");
    assert_eq!(m["transactionId"], "txn-k/1", "{m}");
    assert_eq!(m["partition"], "p3", "{m}");
    assert_eq!(m["data"], json!({"x": 1}), "{m}");
    assert!(
        seen_at >= deliver_at,
        "seen {seen_at} before deliverAt {deliver_at}"
    );
    let late = seen_at.signed_duration_since(deliver_at).num_milliseconds();
    assert!(late < 1000, "{late} ms late");
    assert!(more.is_empty(), "fired twice: {more:?}");
    assert_eq!(pending(&b).await, 0);
}

#[actix_rt::test]
async fn a_fire_that_cannot_push_backs_off_keeps_the_timer_and_fires_later() {
    let b = TestBroker::start().await;
    let (status, body) = b
        .post("/api/v1/system/maintenance", &json!({"push": true}))
        .await;
    assert!(status.is_success(), "{body}");
    one(&b, schedule("held", "k", json!("later"), 0)).await;

    let backed_off = eventually(Duration::from_secs(5), || async {
        let attempts: i32 = b
            .sql()
            .await
            .query_one(
                "SELECT attempts FROM queen.timers WHERE timer_key = 'k'",
                &[],
            )
            .await
            .ok()?
            .get(0);
        (attempts >= 1).then_some(attempts)
    })
    .await;
    let (_, peek) = b.get("/api/v1/timers/held/k").await;
    b.post("/api/v1/system/maintenance", &json!({"push": false}))
        .await;
    let got = drain(&b, "held", Duration::from_secs(3)).await;

    assert!(backed_off.is_some(), "no failed fire counted");
    assert_eq!(peek["found"], true, "kept while it cannot push: {peek}");
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(got[0]["data"], "later");
    assert_eq!(pending(&b).await, 0);
}
