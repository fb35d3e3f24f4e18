//! The cycle: state ops, sink pushes and the ack commit together or not at all. A stale
//! lease (expired, replaced, another group's) writes nothing; a partial ack keeps the lease
//! on the tail, which comes back in order after it expires; a resent cycle that already
//! applied is refused; `count` beyond the batch is a 400.

use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{json, Value};

use super::{cycle_body, query_id, sink_payloads, state};
use crate::support::{payloads, TestBroker};

fn pop_path(batch: usize, lease_secs: u64) -> String {
    format!("/api/v1/pop/queue/src?consumerGroup=streams.q&batch={batch}&leaseSeconds={lease_secs}")
}

/// The cursor of (src's partition, streams.q): (committed, lease held).
async fn cursor(b: &TestBroker) -> (i64, bool) {
    let row = b
        .sql()
        .await
        .query_one(
            "SELECT c.committed, c.worker_id IS NOT NULL FROM queen.log_consumers c
             JOIN queen.log_partitions p ON p.id = c.partition_id
             JOIN queen.queues q ON q.id = p.queue_id
             WHERE q.name = 'src' AND c.consumer_group = 'streams.q'",
            &[],
        )
        .await
        .expect("the cursor");
    (row.get(0), row.get(1))
}

fn one_op(key: &str) -> Value {
    json!([{"type": "upsert", "key": key, "value": {"n": 1}}])
}

#[actix_rt::test]
async fn a_stale_lease_writes_nothing_and_the_live_one_writes_everything() {
    let b = TestBroker::start().await;
    let (before_all, before_failed) = cycle_counts(&b).await;
    b.push("src", "Default", &[json!(1), json!(2), json!(3)])
        .await;
    let id = query_id(&b, "q", "src").await;
    let first = b.pop_messages(&pop_path(10, 1)).await;
    assert_eq!(first.len(), 3);
    let pid = first[0]["partitionId"]
        .as_str()
        .expect("partitionId")
        .to_owned();
    tokio::time::sleep(Duration::from_millis(1500)).await;

    // Expired, not yet replaced.
    let stale = cycle_body(&id, &first, 3, one_op("a"), &[json!("x")], true);
    let (s, body) = b.post("/streams/v1/cycle", &stale).await;
    assert_eq!(
        (s, &body["success"], &body["code"]),
        (StatusCode::OK, &json!(false), &json!("lease")),
        "{body}"
    );

    // Replaced by a new pop's lease.
    let second = b.pop_messages(&pop_path(10, 30)).await;
    assert_eq!(payloads(&second), [json!(1), json!(2), json!(3)]);
    let (s, body) = b.post("/streams/v1/cycle", &stale).await;
    assert_eq!(
        (s, &body["success"]),
        (StatusCode::OK, &json!(false)),
        "{body}"
    );

    // Another group's cycle under this lease.
    let mut wrong_group = cycle_body(&id, &second, 3, one_op("a"), &[json!("x")], true);
    wrong_group["consumer_group"] = json!("streams.other");
    let (_, body) = b.post("/streams/v1/cycle", &wrong_group).await;
    assert_eq!(body["code"], "lease", "{body}");

    // Nothing of any of them: no state, no push, no ack.
    assert!(state(&b, &id, &pid, json!({})).await.is_empty());
    assert!(sink_payloads(&b, "check1").await.is_empty());
    assert_eq!(cursor(&b).await.0, -1, "no ack");

    let live = cycle_body(
        &id,
        &second,
        3,
        one_op("b"),
        &[json!("y"), json!("z")],
        true,
    );
    let (s, body) = b.post("/streams/v1/cycle", &live).await;
    assert_eq!(
        (s, &body["success"]),
        (StatusCode::OK, &json!(true)),
        "{body}"
    );
    assert_eq!(super::keys(&state(&b, &id, &pid, json!({})).await), ["b"]);
    assert_eq!(sink_payloads(&b, "check2").await, [json!("y"), json!("z")]);
    assert_eq!(
        cursor(&b).await,
        (2, false),
        "all three acked, lease released"
    );

    // Sent again (a client retry after a lost answer): refused, nothing twice.
    let (_, again) = b.post("/streams/v1/cycle", &live).await;
    assert_eq!(again["success"], false, "{again}");
    assert!(sink_payloads(&b, "check3").await == [json!("y"), json!("z")]);
    // Five cycles, four of them refused (other tests may add to the counters meanwhile).
    let (all, failed) = cycle_counts(&b).await;
    assert!(
        all - before_all >= 5 && failed - before_failed >= 4,
        "{all} {failed}"
    );
}

/// `streams.cycles` and `streams.failedCycles` from `/metrics`.
async fn cycle_counts(b: &TestBroker) -> (u64, u64) {
    let (_, m) = b.get("/metrics").await;
    let streams = m
        .pointer("/streams")
        .or_else(|| m.pointer("/broker/streams"))
        .cloned()
        .unwrap_or_else(|| panic!("no streams counters: {m}"));
    let n = |k: &str| {
        streams[k]
            .as_u64()
            .unwrap_or_else(|| panic!("{k}: {streams}"))
    };
    (n("cycles"), n("failedCycles"))
}

#[actix_rt::test]
async fn a_partial_ack_keeps_the_lease_and_the_tail_comes_back_in_order_after_expiry() {
    let b = TestBroker::start().await;
    let sent: Vec<Value> = (0..5).map(|i| json!(i)).collect();
    b.push("src", "Default", &sent).await;
    let id = query_id(&b, "q", "src").await;
    let batch = b.pop_messages(&pop_path(5, 2)).await;
    assert_eq!(batch.len(), 5);

    // count beyond the batch: a 400, nothing written.
    let mut too_many = cycle_body(&id, &batch, 5, one_op("k"), &[json!("s")], false);
    too_many["ack"]["count"] = json!(6);
    let (s, body) = b.post("/streams/v1/cycle", &too_many).await;
    assert_eq!(s, StatusCode::BAD_REQUEST, "{body}");
    assert_eq!(cursor(&b).await, (-1, true));

    let partial = cycle_body(
        &id,
        &batch,
        2,
        one_op("k"),
        &[json!("s0"), json!("s1")],
        false,
    );
    let (s, body) = b.post("/streams/v1/cycle", &partial).await;
    assert_eq!(
        (s, &body["success"]),
        (StatusCode::OK, &json!(true)),
        "{body}"
    );
    assert_eq!(
        cursor(&b).await,
        (1, true),
        "two acked, the lease kept on the tail"
    );
    // The tail is not given to anyone while the lease lives.
    assert!(b.pop_messages(&pop_path(5, 30)).await.is_empty());

    // The same partial cycle sent again must not settle messages 3 and 4.
    let (_, again) = b.post("/streams/v1/cycle", &partial).await;
    assert_eq!(
        (&again["success"], &again["code"]),
        (&json!(false), &json!("settled")),
        "{again}"
    );
    assert_eq!(cursor(&b).await.0, 1);

    tokio::time::sleep(Duration::from_millis(2500)).await;
    let tail = b.pop_messages(&pop_path(5, 30)).await;
    assert_eq!(
        payloads(&tail),
        [json!(2), json!(3), json!(4)],
        "the tail, in order"
    );
    let rest = cycle_body(&id, &tail, 3, json!([]), &[json!("s2")], true);
    let (_, body) = b.post("/streams/v1/cycle", &rest).await;
    assert_eq!(body["success"], true, "{body}");
    assert_eq!(cursor(&b).await, (4, false));
    assert_eq!(
        sink_payloads(&b, "check").await,
        [json!("s0"), json!("s1"), json!("s2")]
    );
}

#[actix_rt::test]
async fn a_partial_ack_that_releases_gives_the_tail_back_at_once() {
    let b = TestBroker::start().await;
    b.push("src", "Default", &[json!(0), json!(1), json!(2)])
        .await;
    let id = query_id(&b, "q", "src").await;
    let batch = b.pop_messages(&pop_path(3, 60)).await;
    let partial = cycle_body(&id, &batch, 1, json!([]), &[], true);
    let (_, body) = b.post("/streams/v1/cycle", &partial).await;
    assert_eq!(body["success"], true, "{body}");
    assert_eq!(cursor(&b).await, (0, false));
    let tail = b.pop_messages(&pop_path(3, 60)).await;
    assert_eq!(payloads(&tail), [json!(1), json!(2)]);
}
