//! Conditional writes under real concurrency, checked for losses and duplicates: one
//! winner among concurrent `putIfAbsent`s, and concurrent `incr`s that end at the exact
//! sum with every intermediate value handed out once, also when the database refuses some
//! calls with an error and they are sent again.

use std::collections::HashSet;

use futures_util::future::join_all;
use reqwest::StatusCode;
use serde_json::json;

use super::{get, install_kv_fault, one};
use crate::support::TestBroker;

/// Fifty callers race for one key, ten times over (ten keys), so a race window shows.
#[actix_rt::test]
async fn fifty_concurrent_put_if_absent_have_exactly_one_winner() {
    let b = TestBroker::start().await;
    for round in 0..10 {
        let key = format!("leader-{round}");
        let answers = join_all((0..50).map(|i| {
            let (b, key) = (&b, &key);
            async move {
                one(
                    b,
                    json!({"op": "putIfAbsent", "ns": "race", "key": key, "value": i,
                           "ttlSeconds": 600}),
                )
                .await
            }
        }))
        .await;

        let winners: Vec<_> = answers.iter().filter(|a| a["applied"] == true).collect();
        assert_eq!(winners.len(), 1, "{key}: {answers:?}");
        let winner = winners[0];
        for loser in answers.iter().filter(|a| a["applied"] != true) {
            assert_eq!(loser["reason"], "exists", "{loser}");
            assert_eq!(loser["value"], winner["value"], "{loser}");
            assert_eq!(loser["version"], winner["version"], "{loser}");
        }
        assert_eq!(one(&b, get("race", &key)).await["value"], winner["value"]);
    }
}

#[actix_rt::test]
async fn twenty_workers_of_five_hundred_incr_end_at_the_exact_sum() {
    const WORKERS: i64 = 20;
    const EACH: i64 = 500;
    let b = TestBroker::start().await;
    let seen = join_all((0..WORKERS).map(|_| {
        let b = &b;
        async move {
            let mut values = Vec::with_capacity(EACH as usize);
            for _ in 0..EACH {
                let r = one(
                    b,
                    json!({"op": "incr", "ns": "race", "key": "n", "forever": true}),
                )
                .await;
                assert_eq!(r["applied"], true, "{r}");
                values.push(r["value"].as_i64().expect("an integer"));
            }
            values
        }
    }))
    .await;

    let all: Vec<i64> = seen.into_iter().flatten().collect();
    let distinct: HashSet<i64> = all.iter().copied().collect();
    assert_eq!(all.len() as i64, WORKERS * EACH);
    assert_eq!(distinct.len(), all.len(), "no value handed out twice");
    assert_eq!(
        distinct,
        (1..=WORKERS * EACH).collect(),
        "no increment lost"
    );
    assert_eq!(one(&b, get("race", "n")).await["value"], WORKERS * EACH);
}

/// The same race with the database refusing one write in ten (a trigger raising inside the
/// batch's statement): every refused call answers 503, which the client resends, and since
/// a 503 means nothing applied the resends still end at the exact sum, no value twice.
#[actix_rt::test]
async fn twenty_workers_of_incr_resending_after_injected_503s_end_at_the_exact_sum() {
    const WORKERS: i64 = 20;
    const EACH: i64 = 200;
    let b = TestBroker::start().await;
    install_kv_fault(
        &b,
        "CREATE FUNCTION public.flaky_kv() RETURNS trigger LANGUAGE plpgsql AS $$ \
         BEGIN IF NEW.namespace = 'flaky' AND random() < 0.1 THEN \
           RAISE EXCEPTION 'injected failure'; END IF; RETURN NEW; END $$",
        "CREATE TRIGGER flaky_kv BEFORE INSERT OR UPDATE ON queen.kv \
           FOR EACH ROW EXECUTE FUNCTION public.flaky_kv()",
    )
    .await;
    let call = json!({"operations": [{"op": "incr", "ns": "flaky", "key": "n", "forever": true}]});

    let seen = join_all((0..WORKERS).map(|_| {
        let (b, call) = (&b, &call);
        async move {
            let (mut values, mut refused) = (Vec::new(), 0);
            while values.len() < EACH as usize {
                let (status, body) = b.post("/api/v1/kv", call).await;
                if status == StatusCode::SERVICE_UNAVAILABLE {
                    refused += 1;
                    continue;
                }
                assert_eq!(status, StatusCode::OK, "{body}");
                values.push(body["results"][0]["value"].as_i64().expect("an integer"));
            }
            (values, refused)
        }
    }))
    .await;

    let refused: usize = seen.iter().map(|(_, r)| r).sum();
    let all: Vec<i64> = seen.into_iter().flat_map(|(v, _)| v).collect();
    let distinct: HashSet<i64> = all.iter().copied().collect();
    assert!(refused > 0, "no failure was injected");
    assert_eq!(distinct.len(), all.len(), "no value handed out twice");
    assert_eq!(
        distinct,
        (1..=WORKERS * EACH).collect(),
        "no increment lost or counted twice ({refused} calls refused)"
    );
    assert_eq!(one(&b, get("flaky", "n")).await["value"], WORKERS * EACH);
}
