//! `getPrefix`: byte order, `after` as an exclusive cursor, `limit` clamped rather than
//! refused, `keysOnly`, and pages that walk a listing end to end.

use serde_json::{json, Value};

use super::{one, put, results};
use crate::support::TestBroker;

fn page(prefix: &str, after: Option<&str>, limit: Value) -> Value {
    json!({"op": "getPrefix", "ns": "app", "prefix": prefix, "after": after, "limit": limit})
}

fn keys(result: &Value) -> Vec<String> {
    result["rows"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|r| r["key"].as_str().unwrap_or_default().to_owned())
        .collect()
}

#[actix_rt::test]
async fn pages_walk_the_prefix_in_byte_order() {
    let b = TestBroker::start().await;
    let stored = [
        "u/a",
        "u/B",
        "u/\u{e9}",
        "u/z",
        "u/zz",
        "u",
        "v/a",
        "u\u{10ffff}",
        "\u{10ffff}x",
    ];
    let ops: Vec<Value> = stored.iter().map(|k| put("app", k, json!(k))).collect();
    results(&b, Value::Array(ops)).await;

    let mut listed = Vec::new();
    let mut after: Option<String> = None;
    for _ in 0..10 {
        let r = one(&b, page("u/", after.as_deref(), json!(2))).await;
        listed.extend(keys(&r));
        if r["truncated"] != json!(true) {
            assert_eq!(r["nextAfter"], json!(null), "{r}");
            break;
        }
        after = r["nextAfter"].as_str().map(str::to_owned);
    }
    // Byte order: upper case before lower case, multi-byte characters last.
    assert_eq!(listed, ["u/B", "u/a", "u/z", "u/zz", "u/\u{e9}"]);

    let top = one(&b, page("u\u{10ffff}", None, json!(10))).await;
    assert_eq!(
        keys(&top),
        ["u\u{10ffff}"],
        "a prefix ending in the last code point"
    );
    let last = one(&b, page("\u{10ffff}", None, json!(10))).await;
    assert_eq!(
        keys(&last),
        ["\u{10ffff}x"],
        "a prefix of only the last code point"
    );
}

#[actix_rt::test]
async fn limits_are_clamped_and_keys_only_leaves_values_out() {
    let b = TestBroker::start().await;
    let ops: Vec<Value> = (0..3)
        .map(|i| put("app", &format!("p/{i}"), json!(i)))
        .collect();
    results(&b, Value::Array(ops)).await;

    let zero = one(&b, page("p/", None, json!(0))).await;
    assert_eq!(keys(&zero), ["p/0"], "limit 0 is clamped to 1: {zero}");
    assert_eq!(zero["truncated"], true);
    assert_eq!(zero["nextAfter"], "p/0");
    let huge = one(&b, page("p/", None, json!(1_000_000))).await;
    assert_eq!(keys(&huge).len(), 3, "{huge}");
    let only = one(
        &b,
        json!({"op": "getPrefix", "ns": "app", "prefix": "p/", "keysOnly": true}),
    )
    .await;
    assert_eq!(keys(&only).len(), 3);
    assert!(only["rows"][0].get("value").is_none(), "{only}");
    assert!(only["rows"][0]["version"].is_i64(), "{only}");
    let after = one(&b, page("p/", Some("p/1"), json!(10))).await;
    assert_eq!(keys(&after), ["p/2"], "after is exclusive");
}
