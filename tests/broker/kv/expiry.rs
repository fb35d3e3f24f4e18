//! TTLs: an expired key is invisible at once (before any sweep), `expect: 0` and
//! `putIfAbsent` win over an expired unswept row, `incr` counts it as 0 and its TTL is
//! create-only, and the retention sweeper removes the expired rows, and only them.

use std::time::Duration;

use serde_json::json;

use super::{get, one, put, results, stored_rows};
use crate::support::{eventually, TestBroker};

/// Moves the expiry of `key` into the past, as if its TTL had run out.
async fn expire(b: &TestBroker, key: &str) {
    let moved = b
        .sql()
        .await
        .execute(
            "UPDATE queen.kv SET expires_at = now() - interval '1 second' WHERE key = $1",
            &[&key],
        )
        .await
        .expect("age a key");
    assert_eq!(moved, 1, "{key}");
}

fn with_ttl(key: &str, ttl: i64) -> serde_json::Value {
    json!({"op": "put", "ns": "app", "key": key, "value": key, "ttlSeconds": ttl})
}

#[actix_rt::test]
async fn an_expired_key_is_invisible_before_any_sweep() {
    let b = TestBroker::start_with(crate::retention::FAST_SWEEP).await;
    // Another node holds the sweeper lease for an hour: this one never sweeps. The time is
    // bound, not computed in the upsert, which Citus refuses on its reference table.
    let until = std::time::SystemTime::now() + std::time::Duration::from_secs(3600);
    b.sql()
        .await
        .execute(
            "INSERT INTO queen.sweeper_lease (id, holder, expires_at) \
             VALUES (1, 'elsewhere', $1) \
             ON CONFLICT (id) DO UPDATE SET holder = 'elsewhere', expires_at = $1",
            &[&until],
        )
        .await
        .expect("hand the lease to another node");
    results(
        &b,
        json!([
            with_ttl("gone", 600),
            with_ttl("cas", 600),
            with_ttl("pia", 600),
            with_ttl("n", 600),
            with_ttl("p/x", 600)
        ]),
    )
    .await;
    for key in ["gone", "cas", "pia", "n", "p/x"] {
        expire(&b, key).await;
    }

    let r = results(
        &b,
        json!([
            get("app", "gone"),
            {"op": "getMany", "ns": "app", "keys": ["gone"]},
            {"op": "getPrefix", "ns": "app", "prefix": "p/"},
            {"op": "check", "ns": "app", "key": "gone", "expect": 0},
            {"op": "put", "ns": "app", "key": "cas", "value": 2, "forever": true, "expect": 0},
            {"op": "putIfAbsent", "ns": "app", "key": "pia", "value": 2, "forever": true},
            {"op": "incr", "ns": "app", "key": "n", "delta": 1, "forever": true},
            {"op": "delete", "ns": "app", "key": "p/x"},
        ]),
    )
    .await;

    assert_eq!(r[0]["found"], false, "{}", r[0]);
    assert_eq!(r[1]["missing"], json!(["gone"]), "{}", r[1]);
    assert_eq!(r[2]["rows"], json!([]), "{}", r[2]);
    assert_eq!(r[3]["applied"], true, "{}", r[3]);
    assert_eq!(
        r[4]["applied"], true,
        "expect 0 wins over an expired row: {}",
        r[4]
    );
    assert_eq!(r[5]["applied"], true, "{}", r[5]);
    assert_eq!(r[6]["value"], 1, "an expired counter counts as 0: {}", r[6]);
    assert_eq!(r[7]["reason"], "absent", "{}", r[7]);
    assert_eq!(stored_rows(&b).await, 5, "nothing swept yet");
}

#[actix_rt::test]
async fn incr_keeps_a_live_key_expiry_and_put_never_inherits_one() {
    let b = TestBroker::start().await;
    let incr = |ttl: i64| json!({"op": "incr", "ns": "app", "key": "n", "ttlSeconds": ttl});
    one(&b, incr(600)).await;
    let first = one(&b, get("app", "n")).await["expiresAt"].clone();
    one(&b, incr(5)).await;
    let after = one(&b, get("app", "n")).await;
    assert_eq!(after["value"], 2);
    assert_eq!(after["expiresAt"], first, "the TTL is create-only");
    one(&b, with_ttl("k", 600)).await;
    one(&b, put("app", "k", json!(1))).await;
    assert_eq!(one(&b, get("app", "k")).await["expiresAt"], json!(null));
}

#[actix_rt::test]
async fn the_sweeper_removes_expired_rows_and_keeps_live_ones() {
    let b = TestBroker::start_with(crate::retention::FAST_SWEEP).await;
    let ops: Vec<_> = (0..30).map(|i| with_ttl(&format!("e{i}"), 600)).collect();
    results(&b, serde_json::Value::Array(ops)).await;
    results(
        &b,
        json!([put("app", "kept", json!(1)), with_ttl("later", 600)]),
    )
    .await;
    b.sql()
        .await
        .execute(
            "UPDATE queen.kv SET expires_at = now() - interval '1 second' \
             WHERE key LIKE 'e%'",
            &[],
        )
        .await
        .expect("age keys");

    let left = eventually(Duration::from_secs(20), || async {
        let n = stored_rows(&b).await;
        (n == 2).then_some(n)
    })
    .await;

    assert_eq!(left, Some(2), "the 30 expired rows are swept");
    assert_eq!(one(&b, get("app", "kept")).await["found"], true);
    assert_eq!(one(&b, get("app", "later")).await["found"], true);
    let (_, metrics) = b.get("/metrics").await;
    assert!(
        metrics["retention"]["removed"]["kvKeys"].as_u64() >= Some(30),
        "{}",
        metrics["retention"]
    );
}
