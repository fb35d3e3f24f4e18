//! Every op and every verdict: hits and misses, compare-and-set, putIfAbsent, delete,
//! check, incr with its bounds and types, reads seeing the batch's own writes, and versions
//! that rise strictly and are never re-issued to a recreated key.

use serde_json::json;

use super::{get, one, put, results};
use crate::support::TestBroker;

#[actix_rt::test]
async fn reads_answer_hits_misses_and_the_batch_own_writes() {
    let b = TestBroker::start().await;
    let r = results(
        &b,
        json!([
            get("app", "k"),
            put("app", "k", json!({"a": [1, 2]})),
            get("app", "k"),
            {"op": "getMany", "ns": "app", "keys": ["k", "nope"]},
        ]),
    )
    .await;

    assert_eq!(r[0], json!({"found": false, "key": "k"}));
    assert_eq!(r[1]["applied"], true, "{}", r[1]);
    let version = r[1]["version"].as_i64().expect("a version");
    assert_eq!(r[2]["found"], true);
    assert_eq!(r[2]["value"], json!({"a": [1, 2]}));
    assert_eq!(r[2]["version"], version);
    assert_eq!(r[2]["expiresAt"], json!(null), "forever");
    let updated = r[2]["updatedAt"].as_str().expect("updatedAt");
    assert!(
        chrono::DateTime::parse_from_rfc3339(updated).is_ok(),
        "{updated}"
    );
    assert_eq!(r[3]["rows"][0]["key"], "k");
    assert_eq!(r[3]["missing"], json!(["nope"]));
    assert_eq!(r[3]["truncated"], false);
}

#[actix_rt::test]
async fn put_with_expect_is_compare_and_set_and_losers_see_the_current_row() {
    let b = TestBroker::start().await;
    let first = one(&b, put("app", "k", json!(1))).await;
    let v1 = first["version"].as_i64().expect("version");
    let cas = |value, expect| {
        json!({"op": "put", "ns": "app", "key": "k", "value": value,
                                     "ttlSeconds": 600, "expect": expect})
    };
    let r = results(&b, json!([cas(2, v1 + 1000)])).await;
    assert_eq!(
        r[0],
        json!({"applied": false, "reason": "version", "key": "k", "value": 1, "version": v1})
    );
    let exists = one(&b, cas(2, 0)).await;
    assert_eq!(
        (&exists["reason"], &exists["value"]),
        (&json!("exists"), &json!(1))
    );
    let won = one(&b, cas(3, v1)).await;
    assert_eq!(won["applied"], true, "{won}");
    assert!(won["version"].as_i64().expect("version") > v1);
    let absent = one(
        &b,
        json!({"op": "put", "ns": "app", "key": "other", "value": 1, "forever": true,
               "expect": 7}),
    )
    .await;
    assert_eq!(absent["reason"], "absent", "{absent}");
    assert_eq!(
        one(&b, get("app", "other")).await["found"],
        false,
        "created nothing"
    );
    assert_eq!(one(&b, get("app", "k")).await["value"], 3);
}

#[actix_rt::test]
async fn put_if_absent_delete_and_check_answer_their_reasons() {
    let b = TestBroker::start().await;
    let pia = |value| {
        json!({"op": "putIfAbsent", "ns": "app", "key": "k", "value": value,
                              "forever": true})
    };
    let check = |expect| json!({"op": "check", "ns": "app", "key": "k", "expect": expect});
    let del = json!({"op": "delete", "ns": "app", "key": "k"});
    let mut r = results(&b, json!([check(json!(0)), pia("a")])).await;
    r.extend(results(&b, json!([pia("b"), check(json!(0))])).await);
    assert_eq!(r[0]["applied"], true, "absent meets expect 0");
    assert_eq!(r[1]["applied"], true);
    let version = r[1]["version"].clone();
    assert_eq!(
        r[2],
        json!({"applied": false, "reason": "exists", "key": "k", "value": "a",
               "version": version})
    );
    assert_eq!(
        (&r[3]["applied"], &r[3]["reason"]),
        (&json!(false), &json!("exists"))
    );
    let held = one(&b, check(version.clone())).await;
    assert_eq!(held["applied"], true, "{held}");
    let stale = one(&b, check(json!(version.as_i64().unwrap_or(0) + 1000))).await;
    assert_eq!(stale["reason"], "version", "{stale}");
    let wrong = one(
        &b,
        json!({"op": "delete", "ns": "app", "key": "k", "expect": 1000}),
    )
    .await;
    assert_eq!(wrong["reason"], "version", "{wrong}");
    assert_eq!(one(&b, del.clone()).await["applied"], true);
    let again = one(&b, del).await;
    assert_eq!(
        (&again["applied"], &again["reason"]),
        (&json!(false), &json!("absent"))
    );
    assert_eq!(one(&b, check(version)).await["reason"], "absent");
}

#[actix_rt::test]
async fn incr_counts_from_zero_keeps_integers_and_refuses_rather_than_caps() {
    let b = TestBroker::start().await;
    let incr = |delta, extra: serde_json::Value| {
        let mut op = json!({"op": "incr", "ns": "app", "key": "n", "delta": delta,
                            "ttlSeconds": 600});
        for (k, v) in extra.as_object().into_iter().flatten() {
            op[k] = v.clone();
        }
        op
    };
    let mut r = Vec::new();
    for op in [
        json!({"op": "incr", "ns": "app", "key": "n", "forever": true}),
        incr(json!(4), json!({})),
        incr(json!(6), json!({"max": 9})),
        incr(json!(-6), json!({"min": 0})),
    ] {
        r.push(one(&b, op).await);
    }
    assert_eq!(
        r[0]["value"],
        json!(1),
        "a missing key counts as 0, delta 1"
    );
    assert!(r[0]["value"].is_i64(), "{}", r[0]);
    assert_eq!(r[1]["value"], json!(5));
    assert!(r[1]["version"].as_i64() > r[0]["version"].as_i64());
    assert_eq!(
        r[2],
        json!({"applied": false, "reason": "limit", "key": "n", "value": 5,
               "version": r[1]["version"]})
    );
    assert_eq!(r[3]["reason"], "limit", "{}", r[3]);
    assert_eq!(
        one(&b, get("app", "n")).await["value"],
        json!(5),
        "refusals spent nothing"
    );
    let half = one(&b, incr(json!(0.5), json!({}))).await;
    assert_eq!(half["value"].as_f64(), Some(5.5), "{half}");
    one(&b, put("app", "s", json!("text"))).await;
    let typed = one(
        &b,
        json!({"op": "incr", "ns": "app", "key": "s", "delta": 1, "forever": true}),
    )
    .await;
    assert_eq!(
        (&typed["reason"], &typed["value"]),
        (&json!("type"), &json!("text"))
    );
    let absent_limit = one(
        &b,
        json!({"op": "incr", "ns": "app", "key": "m", "delta": 5, "max": 3, "forever": true}),
    )
    .await;
    assert_eq!(absent_limit["reason"], "limit", "{absent_limit}");
    assert_eq!(one(&b, get("app", "m")).await["found"], false);
}

#[actix_rt::test]
async fn versions_rise_across_keys_and_a_recreated_key_never_gets_an_old_one() {
    let b = TestBroker::start().await;
    let mut seen = Vec::new();
    for _ in 0..3 {
        let r = results(
            &b,
            json!([put("app", "a", json!(1)), put("app", "b", json!(1)),]),
        )
        .await;
        seen.extend(r.iter().map(|x| x["version"].as_i64().expect("version")));
        one(&b, json!({"op": "delete", "ns": "app", "key": "a"})).await;
    }
    let mut sorted = seen.clone();
    sorted.sort_unstable();
    sorted.dedup();
    assert_eq!(sorted, seen, "strictly rising, never repeated: {seen:?}");
}

/// `getMany` stops adding rows once their values pass 4 MiB: the keys cut are in neither
/// `rows` nor `missing`, and `truncated` says so.
#[actix_rt::test]
async fn get_many_cuts_rows_past_four_mebibytes_of_values_and_says_so() {
    // Arrange: 80 keys of about 60 KB each, 4.8 MB in all, written ten to a call.
    let b = TestBroker::start().await;
    let big = "x".repeat(60_000);
    let keys: Vec<String> = (0..80).map(|i| format!("big-{i:02}")).collect();
    for chunk in keys.chunks(10) {
        let puts: Vec<_> = chunk.iter().map(|k| put("app", k, json!(big))).collect();
        let written = results(&b, json!(puts)).await;
        assert!(written.iter().all(|r| r["applied"] == true));
    }

    // Act
    let r = one(&b, json!({"op": "getMany", "ns": "app", "keys": keys})).await;

    // Assert: the first keys in the asked order, as many as fit 4 MiB, and no more.
    let rows = r["rows"].as_array().expect("rows");
    assert_eq!(r["truncated"], true, "{}", rows.len());
    assert_eq!(r["missing"], json!([]));
    let got: Vec<&str> = rows.iter().filter_map(|row| row["key"].as_str()).collect();
    assert!(!got.is_empty() && got.len() < keys.len(), "{}", got.len());
    assert_eq!(
        got,
        keys[..got.len()]
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>()
    );
    let bytes: usize = rows.iter().map(|row| row["value"].to_string().len()).sum();
    assert!(bytes <= 4 * 1024 * 1024, "{bytes} bytes of values");
    assert!(bytes + 60_002 > 4 * 1024 * 1024, "cut early: {bytes} bytes");
}
