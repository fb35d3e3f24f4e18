//! A permit is a lease: its expiry frees the slot without anyone asking, the next holder's
//! token is higher, and the replaced holder's stale token answers `lost` for renew and
//! release and changes nothing. A renew changes the token, and the old one stops working.

use std::time::{Duration, Instant};

use serde_json::json;

use super::{acquire, get, one, permit_rows, token};
use crate::support::{eventually, TestBroker};

#[actix_rt::test]
async fn expiry_frees_the_slot_and_the_next_holder_gets_a_higher_token() {
    let b = TestBroker::start().await;
    let started = Instant::now();
    let alice = one(&b, acquire("nightly", "alice", 1)).await;
    let t1 = token(&alice);
    assert_eq!(
        one(&b, acquire("nightly", "bob", 1)).await["reason"],
        "held"
    );

    // Nobody releases: bob keeps asking until the lease runs out by itself.
    let bob = eventually(Duration::from_secs(5), || async {
        let answer = one(&b, acquire("nightly", "bob", 30)).await;
        (answer["acquired"] == true).then_some(answer)
    })
    .await
    .expect("the expired permit is free");
    assert!(
        started.elapsed() >= Duration::from_millis(900),
        "not before its expiry"
    );
    let t2 = token(&bob);
    assert!(t2 > t1, "{t1} -> {t2}");
    assert_eq!(bob["slot"], 0, "{bob}");

    let rows = permit_rows(&b).await;
    let renew = json!({"op": "renew", "name": "nightly", "token": t1, "ttlSeconds": 30});
    let renewed = one(&b, renew).await;
    assert_eq!(
        renewed,
        json!({"renewed": false, "reason": "lost",
               "holders": [{"slot": 0, "owner": "bob"}]})
    );
    let release = json!({"op": "release", "name": "nightly", "token": t1});
    assert_eq!(
        one(&b, release).await,
        json!({"released": false, "reason": "lost"})
    );
    assert_eq!(permit_rows(&b).await, rows, "stale tokens changed nothing");
    assert_eq!(one(&b, get("nightly")).await["holders"][0]["token"], t2);
}

#[actix_rt::test]
async fn an_expired_permit_is_not_renewed_or_listed() {
    let b = TestBroker::start().await;
    let alice = one(&b, acquire("short", "alice", 1)).await;
    let t1 = token(&alice);
    let gone = eventually(Duration::from_secs(5), || async {
        let seen = one(&b, get("short")).await;
        (seen["held"] == false).then_some(seen)
    })
    .await
    .expect("the permit expires");
    assert_eq!(gone["holders"], json!([]));
    let renew = json!({"op": "renew", "name": "short", "token": t1, "ttlSeconds": 30,
                       "owner": "alice"});
    assert_eq!(one(&b, renew).await["reason"], "lost");
    assert_eq!(
        permit_rows(&b).await.len(),
        1,
        "expired, unswept, unchanged"
    );
    assert_eq!(permit_rows(&b).await[0].1, t1);
}

#[actix_rt::test]
async fn a_renewed_permit_refuses_its_old_token() {
    let b = TestBroker::start().await;
    let t1 = token(&one(&b, acquire("r", "alice", 30)).await);
    let renew = |t: i64| json!({"op": "renew", "name": "r", "token": t, "ttlSeconds": 30});
    let t2 = token(&one(&b, renew(t1)).await);
    assert!(t2 > t1);
    let rows = permit_rows(&b).await;
    assert_eq!(one(&b, renew(t1)).await["reason"], "lost");
    let release = json!({"op": "release", "name": "r", "token": t1});
    assert_eq!(one(&b, release).await["reason"], "lost");
    assert_eq!(permit_rows(&b).await, rows, "nothing changed");
    let release = json!({"op": "release", "name": "r", "token": t2});
    assert_eq!(one(&b, release).await["released"], true);
}
