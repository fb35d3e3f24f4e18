//! Every route and status: schedule, reschedule (the same upsert), peek, keyset list pages
//! with keys holding `/`, cancel through `DELETE` (cancelled, then absent with the txn
//! echoed) and through `POST`.

use serde_json::json;

use super::{cancel, one, results, schedule};
use crate::support::TestBroker;

#[actix_rt::test]
async fn schedule_then_reschedule_is_one_upsert_and_peek_shows_the_last() {
    let b = TestBroker::start().await;
    let first = one(
        &b,
        schedule("orders", "order/9f1/expire", json!({"a": 1}), 60_000),
    )
    .await;
    let mut again = schedule("orders", "order/9f1/expire", json!({"a": 2}), 120_000);
    again["op"] = json!("reschedule");
    again["partition"] = json!("p7");
    let second = one(&b, again).await;

    assert_eq!(first["ok"], true, "{first}");
    assert_eq!(first["status"], "scheduled");
    assert_eq!(first["timerKey"], "order/9f1/expire");
    assert_eq!(first["txn"], "txn-order/9f1/expire");
    let deliver_at = first["deliverAt"].as_str().expect("deliverAt");
    let at = chrono::DateTime::parse_from_rfc3339(deliver_at).expect("an instant");
    let ahead = at
        .signed_duration_since(chrono::Utc::now())
        .num_milliseconds();
    assert!(
        (50_000..=70_000).contains(&ahead),
        "deliverAt {ahead} ms ahead"
    );
    let id = uuid::Uuid::parse_str(first["messageId"].as_str().expect("messageId")).expect("uuid");
    assert_eq!(id.get_version_num(), 7);
    assert_eq!(second["status"], "rescheduled", "{second}");
    assert_ne!(
        second["messageId"], first["messageId"],
        "a new timer under an old name"
    );

    let (_, peek) = b.get("/api/v1/timers/orders/order/9f1/expire").await;
    assert_eq!(peek["found"], true, "{peek}");
    assert_eq!(peek["partition"], "p7");
    assert_eq!(peek["messageId"], second["messageId"]);
    assert_eq!(peek["payload"], super::encode(&json!({"a": 2})));
    let (_, miss) = b.get("/api/v1/timers/orders/order/9f1").await;
    assert_eq!(miss["found"], false, "{miss}");
}

#[actix_rt::test]
async fn cancel_answers_cancelled_then_absent_with_the_txn_echoed() {
    let b = TestBroker::start().await;
    one(&b, schedule("q", "a/b/c", json!(1), 60_000)).await;

    let (status, cancelled) = cancel(&b, "q", "a/b/c", None).await;
    let (_, absent) = cancel(&b, "q", "a/b/c", Some("mine")).await;
    let by_post = one(
        &b,
        json!({"op": "cancel", "queue": "q", "timerKey": "a/b/c"}),
    )
    .await;

    assert!(status.is_success());
    assert_eq!(cancelled["ok"], true, "{cancelled}");
    assert_eq!(cancelled["status"], "cancelled");
    assert_eq!(cancelled["txn"], "txn-a/b/c");
    assert_eq!(absent["ok"], false, "{absent}");
    assert_eq!(absent["status"], "absent");
    assert_eq!(absent["txn"], "mine");
    assert_eq!(by_post["status"], "absent", "{by_post}");
    assert_eq!(super::pending(&b).await, 0);
}

#[actix_rt::test]
async fn list_pages_one_queue_in_key_order_with_an_exclusive_cursor() {
    let b = TestBroker::start().await;
    let keys = ["a", "a/1", "a/2", "b", "c/x/y"];
    let ops: Vec<_> = keys
        .iter()
        .map(|k| schedule("lq", k, json!(k), 60_000))
        .collect();
    results(&b, json!(ops)).await;
    one(&b, schedule("other", "a", json!(0), 60_000)).await;

    let (_, first) = b.get("/api/v1/timers/lq?limit=2").await;
    let after = first["nextAfter"].as_str().expect("nextAfter").to_owned();
    let (_, second) = b
        .get(&format!("/api/v1/timers/lq?limit=2&after={after}"))
        .await;
    let (_, last) = b.get("/api/v1/timers/lq?limit=2&after=a%2F2").await;
    let (_, clamped) = b.get("/api/v1/timers/lq?limit=0").await;

    let names = |page: &serde_json::Value| -> Vec<String> {
        page["rows"]
            .as_array()
            .expect("rows")
            .iter()
            .map(|r| r["timerKey"].as_str().unwrap_or_default().to_owned())
            .collect()
    };
    assert_eq!(names(&first), ["a", "a/1"], "{first}");
    assert_eq!(first["truncated"], true);
    assert_eq!(names(&second), ["a/2", "b"], "{second}");
    assert_eq!(names(&last), ["b", "c/x/y"], "{last}");
    assert_eq!(last["truncated"], false);
    assert_eq!(last["nextAfter"], json!(null));
    assert_eq!(
        names(&clamped).len(),
        1,
        "limit 0 is clamped to 1: {clamped}"
    );
}
