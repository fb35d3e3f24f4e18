//! The lock phase (`--locks`): acquire + release cycles through `POST /api/v1/locks`, each
//! client on a lock name of its own, every fourth cycle also trying one name all clients
//! share. Lock ops: `acquire {name, ttlSeconds, owner}` answering `acquired, token, slot`,
//! and `release {name, token, slot}` answering `released`.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use anyhow::{ensure, Context};
use serde_json::{json, Value};

use super::drive::{drive, Limit, Meter, Tally};
use super::figures::Phase;
use super::http::{is_true, Kv};

/// Every how many cycles a client also tries the shared name.
const SHARED_EVERY: u64 = 4;
/// Lease of every acquired permit, seconds (each is released at once).
const LOCK_TTL_SECONDS: i64 = 30;

/// What the lock phase found.
pub enum LockRun {
    /// The server answered 404 to a lock call.
    NoRoute,
    /// The phase ran: acquire and release calls, cycles as hits, and the shared name's
    /// (granted, tried).
    Ran(Phase, (u64, u64)),
}

/// Runs the phase, or finds out that there is no lock route.
pub async fn run(
    kv: &Kv,
    run_tag: &str,
    clients: u32,
    limit: Limit,
    meter: Meter,
) -> anyhow::Result<LockRun> {
    let probe = format!("{run_tag}-probe");
    let Some(held) = kv.locks(vec![acquire(&probe, "queen-bench-probe")]).await? else {
        return Ok(LockRun::NoRoute);
    };
    let (token, slot) = grant(&held[0]).context("the probe acquire")?;
    release_checked(kv, &probe, token, slot).await?;

    let shared_tried = Arc::new(AtomicU64::new(0));
    let shared_granted = Arc::new(AtomicU64::new(0));
    let (kv, tag) = (kv.clone(), run_tag.to_owned());
    let (tried, granted) = (shared_tried.clone(), shared_granted.clone());
    let phase = drive(
        "locks acquire+release",
        clients,
        limit,
        meter,
        move |client, seq| {
            let (kv, tag, tried, granted) =
                (kv.clone(), tag.clone(), tried.clone(), granted.clone());
            async move {
                let owner = format!("queen-bench-{}-c{client}", std::process::id());
                let own = format!("{tag}-c{client}");
                let mut calls = 2;
                let answer = kv
                    .locks(vec![acquire(&own, &owner)])
                    .await?
                    .context("404")?;
                let (token, slot) = grant(&answer[0])
                    .with_context(|| format!("acquire of {own}, which only this client takes"))?;
                release_checked(&kv, &own, token, slot).await?;
                if seq % SHARED_EVERY == 0 {
                    let shared = format!("{tag}-shared");
                    tried.fetch_add(1, Ordering::Relaxed);
                    calls += 1;
                    let answer = kv
                        .locks(vec![acquire(&shared, &owner)])
                        .await?
                        .context("404")?;
                    if let Ok((token, slot)) = grant(&answer[0]) {
                        granted.fetch_add(1, Ordering::Relaxed);
                        calls += 1;
                        release_checked(&kv, &shared, token, slot).await?;
                    }
                }
                // Ops are HTTP calls here (each carries one op); a hit is a completed cycle.
                Ok(Tally {
                    ops: calls,
                    hits: 1,
                })
            }
        },
    )
    .await;
    let shared = (
        shared_granted.load(Ordering::Relaxed),
        shared_tried.load(Ordering::Relaxed),
    );
    Ok(LockRun::Ran(phase, shared))
}

fn acquire(name: &str, owner: &str) -> Value {
    json!({"op": "acquire", "name": name, "ttlSeconds": LOCK_TTL_SECONDS, "owner": owner})
}

/// The token and slot of a granted acquire.
fn grant(result: &Value) -> anyhow::Result<(i64, i64)> {
    ensure!(is_true(result, "acquired"), "not acquired: {result}");
    let token = result["token"]
        .as_i64()
        .context("an acquire without a token")?;
    let slot = result["slot"]
        .as_i64()
        .context("an acquire without a slot")?;
    Ok((token, slot))
}

async fn release_checked(kv: &Kv, name: &str, token: i64, slot: i64) -> anyhow::Result<()> {
    let op = json!({"op": "release", "name": name, "token": token, "slot": slot});
    let answer = kv.locks(vec![op]).await?.context("404")?;
    ensure!(
        is_true(&answer[0], "released"),
        "release of {name} refused: {}",
        answer[0]
    );
    Ok(())
}
