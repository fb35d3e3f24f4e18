//! The lock under real concurrency: sixteen workers, each with its own owner, take one lock
//! over and over (polling on refusal), and under it read a KV counter and write it back
//! with `expect`, guarded by the lock's `guard`, then release. Checked three ways: the
//! fencing tokens rise strictly in the order the holds were granted, no two holds overlap
//! in time, each hold wrote the counter one above the hold before it, and the counter ends
//! at exactly workers x acquisitions.

use std::time::{Duration, Instant};

use futures_util::future::join_all;
use serde_json::{json, Value};

use super::{acquire, one, token};
use crate::support::TestBroker;

const WORKERS: usize = 16;
/// Holds per worker. The holds are one after the other by design, so the test's time is
/// their number times four round trips: 300 each took 24 s alone and over 500 s beside
/// the rest of the suite on 2 busy cores. 75 each keep every worker contending for
/// hundreds of grants.
const EACH: usize = 75;

/// One hold as its worker saw it: the token, when the grant arrived, when the release was
/// sent, and the counter value it wrote. The server's hold covers `granted..released`, so
/// a later hold's grant arriving before an earlier hold's release was sent is an overlap.
#[derive(Debug)]
struct Hold {
    token: i64,
    granted: Instant,
    released: Instant,
    counted: i64,
}

async fn kv(b: &TestBroker, ops: Value) -> Value {
    let (status, body) = b.post("/api/v1/kv", &json!({ "operations": ops })).await;
    assert_eq!(status, reqwest::StatusCode::OK, "{body}");
    body
}

async fn worker(b: &TestBroker, w: usize) -> Vec<Hold> {
    let owner = format!("worker-{w}");
    let pause = Duration::from_millis(20 + 3 * (w % 7) as u64);
    let mut holds = Vec::with_capacity(EACH);
    while holds.len() < EACH {
        let answer = one(b, acquire("counter-lock", &owner, 5)).await;
        if answer["acquired"] != true {
            assert!(answer.get("already").is_none(), "{answer}");
            tokio::time::sleep(pause).await;
            continue;
        }
        let granted = Instant::now();
        assert!(answer.get("already").is_none(), "a fresh grant: {answer}");
        let held = token(&answer);
        let read = kv(b, json!([{"op": "get", "ns": "work", "key": "n"}])).await;
        let found = &read["results"][0];
        let (value, expect) = if found["found"] == true {
            (
                found["value"].as_i64().unwrap_or(-1),
                found["version"].clone(),
            )
        } else {
            (0, json!(0))
        };
        let wrote = kv(
            b,
            json!([answer["guard"],
                   {"op": "put", "ns": "work", "key": "n", "value": value + 1,
                    "forever": true, "expect": expect}]),
        )
        .await;
        assert_eq!(wrote["results"][1]["applied"], true, "{wrote}");
        let released = Instant::now();
        let release = json!({"op": "release", "name": "counter-lock", "token": held});
        assert_eq!(one(b, release).await["released"], true);
        holds.push(Hold {
            token: held,
            granted,
            released,
            counted: value + 1,
        });
    }
    holds
}

/// 16 x 75 = 1200 holds, each four calls (acquire, read, guarded write, release). A
/// refused worker polls again after 20 to 38 ms: shorter pauses spend the two cores on
/// refusals (1 to 4 ms made the run take twice as long in a debug build).
#[actix_rt::test]
async fn sixteen_workers_guarding_a_counter_with_one_lock_never_overlap() {
    let b = TestBroker::start().await;
    let started = Instant::now();
    let mut holds: Vec<Hold> = join_all((0..WORKERS).map(|w| worker(&b, w)))
        .await
        .into_iter()
        .flatten()
        .collect();
    eprintln!(
        "{} holds by {WORKERS} workers in {:?}",
        holds.len(),
        started.elapsed()
    );

    holds.sort_by_key(|h| h.granted);
    for pair in holds.windows(2) {
        let (earlier, later) = (&pair[0], &pair[1]);
        assert!(
            later.token > earlier.token,
            "tokens rise in grant order: {earlier:?} then {later:?}"
        );
        assert!(
            later.granted >= earlier.released,
            "holds overlap: {earlier:?} and {later:?}"
        );
        assert_eq!(later.counted, earlier.counted + 1, "{earlier:?} {later:?}");
    }
    let total = (WORKERS * EACH) as i64;
    assert_eq!(holds.len() as i64, total);
    let end = kv(&b, json!([{"op": "get", "ns": "work", "key": "n"}])).await;
    assert_eq!(end["results"][0]["value"], total, "{end}");
}
