//! `required: true`: a lost precondition rolls the whole batch back, including the writes
//! before it, and answers `{ok: false, reason: "kv_precondition", failedIndex, kvReason,
//! version, value}` with no `results`.

use serde_json::json;

use super::{call, get, one, put};
use crate::support::TestBroker;

#[actix_rt::test]
async fn a_lost_required_precondition_undoes_the_earlier_writes_of_the_batch() {
    let b = TestBroker::start().await;
    let held = one(&b, put("app", "lock", json!("me"))).await;
    let before = one(&b, get("app", "counter")).await;
    assert_eq!(before["found"], false);

    let body = call(
        &b,
        json!([
            put("app", "written", json!(1)),
            {"op": "incr", "ns": "app", "key": "counter", "forever": true},
            {"op": "check", "ns": "app", "key": "lock", "expect": 0, "required": true},
            put("app", "after", json!(1)),
        ]),
    )
    .await;

    assert_eq!(
        body,
        json!({"ok": false, "reason": "kv_precondition", "failedIndex": 2,
               "kvReason": "exists", "version": held["version"], "value": "me"})
    );
    for key in ["written", "counter", "after"] {
        assert_eq!(
            one(&b, get("app", key)).await["found"],
            false,
            "{key} undone"
        );
    }
    let kept = call(
        &b,
        json!([
            put("app", "written", json!(1)),
            {"op": "check", "ns": "app", "key": "lock", "expect": held["version"],
             "required": true},
        ]),
    )
    .await;
    assert_eq!(kept["results"][1]["applied"], true, "{kept}");
    assert_eq!(one(&b, get("app", "written")).await["found"], true);
}
