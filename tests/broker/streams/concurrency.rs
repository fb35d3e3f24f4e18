//! Concurrent cycles with real concurrency: the same leased batch cycled by several
//! clients at once commits exactly once per partition (no sink message lost or doubled),
//! and idle flushes of one (query, partition) take turns.

use std::collections::BTreeMap;

use futures_util::future::join_all;
use serde_json::{json, Value};

use super::{cycle_body, query_id, sink_payloads, state};
use crate::support::TestBroker;

const PARTITIONS: usize = 4;
const RACERS: usize = 5;

#[actix_rt::test]
async fn racing_cycles_of_one_batch_commit_once_and_lose_nothing() {
    let b = TestBroker::start().await;
    for p in 0..PARTITIONS {
        let sent: Vec<Value> = (0..10).map(|i| json!(format!("p{p}-{i}"))).collect();
        b.push("src", &format!("p{p}"), &sent).await;
    }
    let id = query_id(&b, "q", "src").await;
    let mut batches = Vec::new();
    for _ in 0..PARTITIONS {
        let batch = b
            .pop_messages("/api/v1/pop/queue/src?consumerGroup=streams.q&batch=10&leaseSeconds=60")
            .await;
        assert_eq!(batch.len(), 10);
        batches.push(batch);
    }
    let mut calls = Vec::new();
    for batch in &batches {
        let out: Vec<Value> = batch.iter().map(|m| m["data"].clone()).collect();
        let ops = json!([{"type": "upsert", "key": "seen", "value": {"n": 10}}]);
        let body = cycle_body(&id, batch, 10, ops, &out, true);
        for _ in 0..RACERS {
            calls.push(body.clone());
        }
    }
    let answers = join_all(calls.iter().map(|body| b.post("/streams/v1/cycle", body))).await;
    let mut wins: BTreeMap<String, usize> = BTreeMap::new();
    for ((status, answer), body) in answers.iter().zip(&calls) {
        assert!(status.is_success(), "{status}: {answer}");
        if answer["success"] == true {
            *wins.entry(body["partition_id"].to_string()).or_default() += 1;
        } else {
            assert!(
                answer["code"] == "lease" || answer["code"] == "settled",
                "{answer}"
            );
        }
    }
    assert_eq!(wins.len(), PARTITIONS, "{wins:?}");
    assert!(wins.values().all(|w| *w == 1), "{wins:?}");
    let mut got: Vec<String> = sink_payloads(&b, "check")
        .await
        .iter()
        .filter_map(|v| v.as_str().map(str::to_owned))
        .collect();
    got.sort();
    let mut want: Vec<String> = (0..PARTITIONS)
        .flat_map(|p| (0..10).map(move |i| format!("p{p}-{i}")))
        .collect();
    want.sort();
    assert_eq!(got, want, "every message once");
    for batch in &batches {
        let pid = batch[0]["partitionId"].as_str().expect("partitionId");
        assert_eq!(state(&b, &id, pid, json!({})).await.len(), 1);
    }
}
