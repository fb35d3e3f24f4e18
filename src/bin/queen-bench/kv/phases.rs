//! The phases of `queen-bench kv`, each a [`drive`] of one kind of call, and the checks
//! that read what a phase left behind.

use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use anyhow::Context;
use serde_json::Value;
use tokio_postgres::Client;

use super::baseline::BaselineClient;
use super::drive::{drive, Limit, Meter, Tally};
use super::figures::{Check, Phase};
use super::http::{get_op, incr_op, is_true, put_op, value, Kv};

/// The tenant of calls without a token, which the baseline rows carry too.
const TENANT: &str = "";

/// The baseline's upserts: each client its own keys, the values the broker's puts store.
pub async fn baseline_put_phase(
    pool: &[Arc<BaselineClient>],
    ns: &str,
    clients: u32,
    limit: Limit,
    meter: Meter,
    written: Arc<Vec<AtomicU64>>,
) -> Phase {
    let (pool, ns) = (pool.to_vec(), ns.to_owned());
    drive(
        "baseline put",
        clients,
        limit,
        meter.without_broker(),
        move |c, seq| {
            let (db, ns, written) = (pool[c as usize].clone(), ns.clone(), written.clone());
            async move {
                let stored = db.put(TENANT, &ns, &key(c, seq), &value(c, seq)).await?;
                written[c as usize].fetch_max(seq + 1, Ordering::Relaxed);
                Ok(Tally {
                    ops: 1,
                    hits: u64::from(stored),
                })
            }
        },
    )
    .await
}

/// The baseline's selects of the keys its upserts wrote.
pub async fn baseline_get_phase(
    pool: &[Arc<BaselineClient>],
    ns: &str,
    clients: u32,
    limit: Limit,
    meter: Meter,
    written: Arc<Vec<AtomicU64>>,
) -> Phase {
    let (pool, ns) = (pool.to_vec(), ns.to_owned());
    drive(
        "baseline get",
        clients,
        limit,
        meter.without_broker(),
        move |c, seq| {
            let (db, ns) = (pool[c as usize].clone(), ns.clone());
            let k = key(c, seq % written[c as usize].load(Ordering::Relaxed).max(1));
            async move {
                let found = db.get(TENANT, &ns, &k).await?;
                Ok(Tally {
                    ops: 1,
                    hits: u64::from(found),
                })
            }
        },
    )
    .await
}

/// The key of a client's `seq`th put (both sides use the same keys).
fn key(client: u32, seq: u64) -> String {
    format!("c{client}-{seq}")
}

/// One counter per client: how many keys it has put (its gets read among them).
pub fn per_client(clients: u32) -> Arc<Vec<AtomicU64>> {
    Arc::new((0..clients).map(|_| AtomicU64::new(0)).collect())
}

/// Whether every get of a phase found its key (each read a key its client put).
pub fn every_get_found(p: &Phase) -> Check {
    Check::equal(
        &format!("{}: every get found its key", p.name),
        p.hits as i64,
        p.ops as i64,
        "gets",
    )
}

/// Calls of `--batch` ops: puts of fresh keys, then gets of the keys just put (reads see
/// the batch's earlier writes), all of which must apply or be found.
pub async fn batch_phase(
    kv: &Kv,
    ns: &str,
    batch: u32,
    clients: u32,
    limit: Limit,
    meter: Meter,
) -> Phase {
    let (kv, ns, half) = (kv.clone(), ns.to_owned(), u64::from(batch / 2));
    let odd = u64::from(batch % 2);
    let name = format!("broker batch x{batch}");
    drive(&name, clients, limit, meter, move |c, seq| {
        let (kv, ns) = (kv.clone(), ns.clone());
        async move {
            let keys: Vec<String> = (0..half + odd).map(|i| format!("c{c}-{seq}-{i}")).collect();
            let mut ops: Vec<Value> = keys
                .iter()
                .enumerate()
                .map(|(i, k)| put_op(&ns, k, value(c, seq * 1000 + i as u64)))
                .collect();
            ops.extend(keys.iter().take(half as usize).map(|k| get_op(&ns, k)));
            let n = ops.len();
            let results = kv.call(ops).await?;
            let hits = results
                .iter()
                .filter(|r| is_true(r, "applied") || is_true(r, "found"))
                .count();
            Ok(Tally {
                ops: n as u64,
                hits: hits as u64,
            })
        }
    })
    .await
}

/// Single-op puts through the broker, each client its own fresh keys (the baseline's).
pub async fn put_phase(
    name: &str,
    kv: &Kv,
    ns: &str,
    clients: u32,
    limit: Limit,
    meter: Meter,
    written: Arc<Vec<AtomicU64>>,
) -> Phase {
    let (kv, ns) = (kv.clone(), ns.to_owned());
    drive(name, clients, limit, meter, move |c, seq| {
        let (kv, ns, written) = (kv.clone(), ns.clone(), written.clone());
        async move {
            let results = kv
                .call(vec![put_op(&ns, &key(c, seq), value(c, seq))])
                .await?;
            written[c as usize].fetch_max(seq + 1, Ordering::Relaxed);
            Ok(Tally {
                ops: 1,
                hits: u64::from(is_true(&results[0], "applied")),
            })
        }
    })
    .await
}

/// Single-op gets through the broker of keys the clients put.
pub async fn get_phase(
    name: &str,
    kv: &Kv,
    ns: &str,
    clients: u32,
    limit: Limit,
    meter: Meter,
    written: Arc<Vec<AtomicU64>>,
) -> Phase {
    let (kv, ns) = (kv.clone(), ns.to_owned());
    drive(name, clients, limit, meter, move |c, seq| {
        let (kv, ns) = (kv.clone(), ns.clone());
        let k = key(c, seq % written[c as usize].load(Ordering::Relaxed).max(1));
        async move {
            let results = kv.call(vec![get_op(&ns, &k)]).await?;
            Ok(Tally {
                ops: 1,
                hits: u64::from(is_true(&results[0], "found")),
            })
        }
    })
    .await
}

/// Rows the broker stored in `ns` against the puts it answered applied.
pub async fn stored_rows(admin: &Client, ns: &str, put: &Phase) -> Check {
    let name = "broker rows = puts answered applied";
    match admin
        .query_one(
            "SELECT count(*) FROM queen.kv WHERE tenant = $1 AND namespace = $2",
            &[&TENANT, &ns],
        )
        .await
    {
        Ok(row) => Check::equal(name, row.get(0), put.hits as i64, "rows"),
        Err(e) => {
            let why = e
                .as_db_error()
                .map_or_else(|| e.to_string(), |d| d.message().to_owned());
            Check::skipped(name, format!("queen.kv cannot be counted here: {why}"))
        }
    }
}

/// Every client increments one key `--incr-per-client` times; the key's final value must
/// equal the increments answered applied, and no two answers may carry the same value.
pub async fn incr_phase(
    kv: &Kv,
    ns: &str,
    clients: u32,
    per_client: u64,
    meter: Meter,
) -> (Phase, Vec<Check>) {
    let answered = Arc::new(Mutex::new(Vec::new()));
    let phase = {
        let (kv, ns, answered) = (kv.clone(), ns.to_owned(), answered.clone());
        let limit = Limit::OpsPerClient(per_client);
        drive(
            "broker incr (one key)",
            clients,
            limit,
            meter,
            move |_, _| {
                let (kv, ns, answered) = (kv.clone(), ns.clone(), answered.clone());
                async move {
                    let results = kv.call(vec![incr_op(&ns, "counter")]).await?;
                    let applied = is_true(&results[0], "applied");
                    if applied {
                        let v = results[0]["value"]
                            .as_i64()
                            .context("an incr without a number")?;
                        answered
                            .lock()
                            .map_err(|_| anyhow::anyhow!("poisoned"))?
                            .push(v);
                    }
                    Ok(Tally {
                        ops: 1,
                        hits: u64::from(applied),
                    })
                }
            },
        )
        .await
    };
    let name = "counter = increments answered applied";
    let mut checks = vec![match kv.call(vec![get_op(ns, "counter")]).await {
        Ok(r) => match r[0]["value"].as_i64() {
            Some(v) => Check::equal(name, v, phase.hits as i64, "increments"),
            None => Check::skipped(name, format!("the get answered {}", r[0])),
        },
        Err(e) => Check::skipped(name, format!("{e:#}")),
    }];
    let values = answered.lock().map(|v| v.clone()).unwrap_or_default();
    let distinct = values.iter().collect::<HashSet<_>>().len();
    checks.push(Check::equal(
        "incr answers carry distinct values",
        distinct as i64,
        values.len() as i64,
        "values",
    ));
    (phase, checks)
}
