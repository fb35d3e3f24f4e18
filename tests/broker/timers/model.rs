//! 10,000 timer ops on random keys (schedules, reschedules, cancels, random delays) while
//! the fire loop runs, checked against a model built from the answers: every timer that
//! was pending at its end is delivered exactly once with its last payload, no cancelled or
//! replaced one is delivered, and nothing else arrives.

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use serde_json::{json, Value};

use super::{encode, pending, results};
use crate::support::{eventually, TestBroker};

const OPS: usize = 10_000;
const BATCH: usize = 100;
const KEYS: u32 = 3_000;

#[actix_rt::test]
async fn ten_thousand_random_ops_deliver_exactly_the_model() {
    let b = TestBroker::start().await;
    let mut rng = fastrand::Rng::with_seed(32);
    // key -> the pending timer's (txn, payload), as the answers tell it.
    let mut model: HashMap<String, (String, Value)> = HashMap::new();
    // txn -> payload of every timer that must be delivered.
    let mut expected: BTreeMap<String, Value> = BTreeMap::new();
    let mut n = 0usize;
    while n < OPS {
        let mut keys: Vec<String> = Vec::new();
        while keys.len() < BATCH {
            let key = format!("k/{}", rng.u32(0..KEYS));
            if !keys.contains(&key) {
                keys.push(key);
            }
        }
        let ops: Vec<Value> = keys
            .iter()
            .map(|key| {
                n += 1;
                if rng.u8(0..10) < 3 {
                    json!({"op": "cancel", "queue": "model", "timerKey": key})
                } else {
                    let op = if rng.bool() { "schedule" } else { "reschedule" };
                    json!({"op": op, "queue": "model", "timerKey": key,
                           "payload": encode(&json!({"n": n})), "txn": format!("t{n}"),
                           "delayMs": rng.i64(-50..1500)})
                }
            })
            .collect();
        let answers = results(&b, json!(ops)).await;
        for (op, answer) in ops.iter().zip(&answers) {
            let key = op["timerKey"].as_str().expect("key").to_owned();
            let status = answer["status"].as_str().unwrap_or_default();
            let fired_before =
                |model: &mut HashMap<String, (String, Value)>,
                 expected: &mut BTreeMap<String, Value>| {
                    if let Some((txn, payload)) = model.remove(&key) {
                        expected.insert(txn, payload);
                    }
                };
            match status {
                "scheduled" => {
                    fired_before(&mut model, &mut expected);
                    let payload = json!({"n": op["txn"].as_str().unwrap_or("")[1..].parse::<u64>().unwrap_or(0)});
                    model.insert(key, (op["txn"].as_str().unwrap_or("").to_owned(), payload));
                }
                "rescheduled" => {
                    let payload = json!({"n": op["txn"].as_str().unwrap_or("")[1..].parse::<u64>().unwrap_or(0)});
                    model.insert(key, (op["txn"].as_str().unwrap_or("").to_owned(), payload));
                }
                "cancelled" => {
                    model.remove(&key);
                }
                "absent" | "too_late" => fired_before(&mut model, &mut expected),
                other => panic!("{other}: {answer}"),
            }
        }
    }
    for (_, (txn, payload)) in model.drain() {
        expected.insert(txn, payload);
    }
    let emptied = eventually(Duration::from_secs(30), || async {
        (pending(&b).await == 0).then_some(())
    })
    .await;
    let got = super::drain(&b, "model", Duration::from_secs(2)).await;

    assert!(emptied.is_some(), "timers still pending");
    let mut delivered: BTreeMap<String, Value> = BTreeMap::new();
    for m in &got {
        let txn = m["transactionId"].as_str().expect("txn").to_owned();
        assert!(
            delivered.insert(txn.clone(), m["data"].clone()).is_none(),
            "{txn} delivered twice"
        );
    }
    assert_eq!(delivered.len(), expected.len(), "delivered vs model");
    assert!(
        delivered == expected,
        "a delivered payload differs from the model"
    );
}
