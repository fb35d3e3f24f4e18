//! Cancel, reschedule and fire exclude each other per key, under real concurrency: a
//! cancelled timer never fires; an absent or too_late cancel means it fired, once; a
//! rescheduled timer fires once with the new payload; a reschedule that came after the
//! fire (`scheduled`) is a new timer and fires once more.

use std::collections::HashMap;
use std::time::Duration;

use futures_util::future::join_all;
use serde_json::{json, Value};

use super::{cancel, drain, one, results, schedule};
use crate::support::TestBroker;

const KEYS: usize = 150;

fn txns(messages: &[Value]) -> HashMap<String, Vec<Value>> {
    let mut by_txn: HashMap<String, Vec<Value>> = HashMap::new();
    for m in messages {
        by_txn
            .entry(m["transactionId"].as_str().unwrap_or_default().to_owned())
            .or_default()
            .push(m["data"].clone());
    }
    by_txn
}

#[actix_rt::test]
async fn cancels_racing_the_fire_either_cancel_or_see_it_fired_once() {
    let b = TestBroker::start().await;
    let ops: Vec<Value> = (0..KEYS)
        .map(|k| schedule("race-c", &format!("k{k}"), json!(k), 300))
        .collect();
    results(&b, json!(ops)).await;
    tokio::time::sleep(Duration::from_millis(250)).await;

    let verdicts = join_all((0..KEYS).map(|k| {
        let b = &b;
        async move {
            tokio::time::sleep(Duration::from_millis((k % 30) as u64 * 3)).await;
            cancel(b, "race-c", &format!("k{k}"), None).await.1
        }
    }))
    .await;
    let by_txn = txns(&drain(&b, "race-c", Duration::from_secs(2)).await);

    let mut seen = HashMap::new();
    for (k, v) in verdicts.iter().enumerate() {
        let status = v["status"].as_str().unwrap_or_default().to_owned();
        let fired = by_txn.get(&format!("txn-k{k}")).map_or(0, Vec::len);
        match status.as_str() {
            "cancelled" => assert_eq!(fired, 0, "k{k} cancelled and fired"),
            "absent" | "too_late" => assert_eq!(fired, 1, "k{k} {status}, fired {fired}"),
            other => panic!("k{k}: {other}: {v}"),
        }
        *seen.entry(status).or_insert(0) += 1;
    }
    assert_eq!(
        by_txn.values().map(Vec::len).sum::<usize>(),
        KEYS - seen.get("cancelled").copied().unwrap_or(0)
    );
    eprintln!("cancel verdicts: {seen:?}");
}

#[actix_rt::test]
async fn reschedules_racing_the_fire_fire_once_with_the_last_payload() {
    let b = TestBroker::start().await;
    let ops: Vec<Value> = (0..KEYS)
        .map(|k| schedule("race-r", &format!("k{k}"), json!("old"), 300))
        .collect();
    results(&b, json!(ops)).await;
    tokio::time::sleep(Duration::from_millis(250)).await;

    let verdicts = join_all((0..KEYS).map(|k| {
        let b = &b;
        async move {
            tokio::time::sleep(Duration::from_millis((k % 30) as u64 * 3)).await;
            let mut op = schedule("race-r", &format!("k{k}"), json!("new"), 0);
            op["op"] = json!("reschedule");
            op["txn"] = json!(format!("new-k{k}"));
            one(b, op).await
        }
    }))
    .await;
    let by_txn = txns(&drain(&b, "race-r", Duration::from_secs(2)).await);

    for (k, v) in verdicts.iter().enumerate() {
        let old = by_txn
            .get(&format!("txn-k{k}"))
            .cloned()
            .unwrap_or_default();
        let new = by_txn
            .get(&format!("new-k{k}"))
            .cloned()
            .unwrap_or_default();
        let (old, new) = (old.len(), new.len());
        match v["status"].as_str().unwrap_or_default() {
            "rescheduled" => assert_eq!((old, new), (0, 1), "k{k}"),
            "too_late" => assert_eq!((old, new), (1, 0), "k{k}"),
            // Fired, then a new timer under the old name.
            "scheduled" => assert_eq!((old, new), (1, 1), "k{k}"),
            other => panic!("k{k}: {other}: {v}"),
        }
    }
}
