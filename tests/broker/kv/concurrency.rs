//! Conditional writes under real concurrency, checked for losses and duplicates: one
//! winner among concurrent `putIfAbsent`s, and concurrent `incr`s that end at the exact
//! sum with every intermediate value handed out once.

use std::collections::HashSet;

use futures_util::future::join_all;
use serde_json::json;

use super::{get, one};
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
