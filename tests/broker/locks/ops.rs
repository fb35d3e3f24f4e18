//! Every op and answer field: acquire, renew, release and get; one holder per slot;
//! owner-idempotent acquire and renew; a semaphore granting distinct slots; a guard that
//! the KV route takes verbatim.

use serde_json::json;

use super::{acquire, get, one, permit_rows, results, token};
use crate::support::TestBroker;

#[actix_rt::test]
async fn acquire_get_renew_and_release_answer_every_field() {
    let b = TestBroker::start().await;
    let won = one(&b, acquire("report", "alice", 30)).await;
    let t1 = token(&won);
    assert_eq!(won["acquired"], true, "{won}");
    assert_eq!(won["slot"], 0, "{won}");
    assert_eq!(won["owner"], "alice", "{won}");
    assert!(won.get("already").is_none(), "{won}");
    assert_eq!(
        won["guard"],
        json!({"op": "check", "ns": "queen-locks", "key": "report#0", "expect": t1,
               "required": true})
    );

    let refused = one(&b, acquire("report", "bob", 30)).await;
    assert_eq!(
        refused,
        json!({"acquired": false, "reason": "held",
               "holders": [{"slot": 0, "owner": "alice"}]})
    );

    let seen = one(&b, get("report")).await;
    assert_eq!(seen["held"], true, "{seen}");
    let holder = &seen["holders"][0];
    assert_eq!(
        (&holder["slot"], &holder["owner"]),
        (&json!(0), &json!("alice"))
    );
    assert_eq!(holder["token"], t1, "{seen}");
    for field in ["since", "expiresAt", "renewedAt"] {
        let at = holder[field].as_str().unwrap_or_default();
        assert!(
            at.ends_with('Z') && chrono::DateTime::parse_from_rfc3339(at).is_ok(),
            "{field}: {seen}"
        );
    }

    let renewed = one(
        &b,
        json!({"op": "renew", "name": "report", "token": t1, "ttlSeconds": 60}),
    )
    .await;
    let t2 = token(&renewed);
    assert_eq!(
        (&renewed["renewed"], &renewed["slot"]),
        (&json!(true), &json!(0))
    );
    assert!(t2 > t1, "{t1} -> {t2}");
    assert_eq!(renewed["guard"]["expect"], t2, "{renewed}");
    let after = one(&b, get("report")).await;
    assert_eq!(after["holders"][0]["token"], t2, "{after}");
    assert_eq!(
        after["holders"][0]["since"], holder["since"],
        "a renew keeps since"
    );
    assert!(
        after["holders"][0]["expiresAt"].as_str() > holder["expiresAt"].as_str(),
        "{after}"
    );

    let released = one(&b, json!({"op": "release", "name": "report", "token": t2})).await;
    assert_eq!(released, json!({"released": true}));
    assert_eq!(
        one(&b, get("report")).await,
        json!({"held": false, "holders": []})
    );
    assert!(permit_rows(&b).await.is_empty(), "the row is gone");
    let again = one(&b, acquire("report", "bob", 30)).await;
    assert!(token(&again) > t2, "{again}");
}

#[actix_rt::test]
async fn a_resent_acquire_or_renew_of_one_owner_answers_its_own_permit() {
    let b = TestBroker::start().await;
    let first = one(&b, acquire("job", "alice", 30)).await;
    let t1 = token(&first);
    let resent = one(&b, acquire("job", "alice", 30)).await;
    assert_eq!(resent["acquired"], true, "{resent}");
    assert_eq!(resent["already"], true, "{resent}");
    assert_eq!((token(&resent), &resent["slot"]), (t1, &json!(0)));
    assert_eq!(resent["guard"], first["guard"]);
    assert_eq!(permit_rows(&b).await[0].1, t1, "no write");

    let renew = |token: i64, owner: Option<&str>| {
        json!({"op": "renew", "name": "job", "token": token, "ttlSeconds": 30,
               "owner": owner})
    };
    let t2 = token(&one(&b, renew(t1, Some("alice"))).await);
    // The answer of that renew was "lost": alice sends it again with the old token.
    let again = one(&b, renew(t1, Some("alice"))).await;
    assert_eq!(again["renewed"], true, "{again}");
    assert!(token(&again) > t2, "{again}");
    let stranger = one(&b, renew(t1, Some("mallory"))).await;
    assert_eq!(
        stranger,
        json!({"renewed": false, "reason": "lost",
               "holders": [{"slot": 0, "owner": "alice"}]})
    );
    let anonymous = one(&b, renew(t1, None)).await;
    assert_eq!(anonymous["reason"], "lost", "{anonymous}");
    assert_eq!(
        permit_rows(&b).await[0].1,
        token(&again),
        "refusals wrote nothing"
    );
}

#[actix_rt::test]
async fn a_semaphore_of_three_grants_three_distinct_slots_to_five_owners() {
    let b = TestBroker::start().await;
    let mut answers = Vec::new();
    for owner in ["a", "b", "c", "d", "e"] {
        let op = json!({"op": "acquire", "name": "pool", "owner": owner, "ttlSeconds": 30,
                        "limit": 3});
        answers.push(one(&b, op).await);
    }
    let slots: Vec<_> = answers[..3].iter().map(|a| a["slot"].clone()).collect();
    assert_eq!(slots, vec![json!(0), json!(1), json!(2)], "{answers:?}");
    for refused in &answers[3..] {
        assert_eq!(refused["acquired"], false, "{refused}");
        assert_eq!(refused["reason"], "held", "{refused}");
        assert_eq!(
            refused["holders"],
            json!([{"slot": 0, "owner": "a"}, {"slot": 1, "owner": "b"},
                   {"slot": 2, "owner": "c"}])
        );
    }
    // The middle permit comes back; the next acquirer gets that slot.
    let release = json!({"op": "release", "name": "pool", "token": token(&answers[1]),
                         "slot": 1});
    assert_eq!(one(&b, release).await["released"], true);
    let d = json!({"op": "acquire", "name": "pool", "owner": "d", "ttlSeconds": 30,
                   "limit": 3});
    let taken = one(&b, d).await;
    assert_eq!(
        (&taken["acquired"], &taken["slot"]),
        (&json!(true), &json!(1))
    );
    assert_eq!(taken["guard"]["key"], "pool#1", "{taken}");
    let held = one(&b, get("pool")).await;
    let owners: Vec<_> = held["holders"]
        .as_array()
        .map(|h| h.iter().map(|x| x["owner"].clone()).collect())
        .unwrap_or_default();
    assert_eq!(owners, vec![json!("a"), json!("d"), json!("c")]);
}

/// Concurrent acquirers of one lock: exactly one wins, the others are refused, and a lock
/// named by several ops of one call is independent of its neighbours.
#[actix_rt::test]
async fn one_holder_per_slot_among_concurrent_acquirers_and_ops_are_independent() {
    let b = TestBroker::start().await;
    for round in 0..5 {
        let name = format!("race-{round}");
        let answers = futures_util::future::join_all(
            (0..20).map(|i| one(&b, acquire(&name, &format!("w{i}"), 30))),
        )
        .await;
        let winners = answers.iter().filter(|a| a["acquired"] == true).count();
        assert_eq!(winners, 1, "{answers:?}");
        for loser in answers.iter().filter(|a| a["acquired"] != true) {
            let reason = loser["reason"].as_str().unwrap_or_default();
            assert!(reason == "held" || reason == "contended", "{loser}");
        }
    }
    let r = results(
        &b,
        json!([
            acquire("free", "a", 30),
            {"op": "release", "name": "nothing", "token": 1},
            acquire("race-0", "a", 30),
            get("race-1"),
        ]),
    )
    .await;
    assert_eq!(r[0]["acquired"], true, "{}", r[0]);
    assert_eq!(r[1], json!({"released": false, "reason": "lost"}));
    assert_eq!(r[2]["acquired"], false, "{}", r[2]);
    assert_eq!(r[3]["held"], true, "{}", r[3]);
}

#[actix_rt::test]
async fn the_guard_is_a_kv_check_that_holds_only_at_the_current_token() {
    let b = TestBroker::start().await;
    let won = one(&b, acquire("g", "alice", 30)).await;
    let kv = |op: &serde_json::Value| json!({"operations": [op]});
    let (_, held) = b.post("/api/v1/kv", &kv(&won["guard"])).await;
    assert_eq!(held["results"][0]["applied"], true, "{held}");
    assert_eq!(held["results"][0]["value"]["owner"], "alice", "{held}");
    one(
        &b,
        json!({"op": "renew", "name": "g", "token": token(&won), "ttlSeconds": 30}),
    )
    .await;
    let (_, stale) = b.post("/api/v1/kv", &kv(&won["guard"])).await;
    assert_eq!(stale["reason"], "kv_precondition", "{stale}");
    assert_eq!(stale["kvReason"], "version", "{stale}");
    assert_eq!(stale["value"]["owner"], "alice", "{stale}");
}
