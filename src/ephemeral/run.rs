//! Runs a [`Call`] on this node's engine: the declaration calls write PostgreSQL first,
//! push and pop make a queue they do not know (reading its declaration once), a waiting
//! pop parks on the queue's [`tokio::sync::Notify`] until a push rings it, a lease falls
//! due, the timeout passes or the broker starts to stop. No message ever reaches
//! PostgreSQL.

use std::fmt::Write as _;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tracing::error;

use super::engine::{Ephemeral, QueueKey};
use super::queue::Queue;
use super::ring::{Delivered, Refusal};
use crate::db::{ephemeral as declarations, Conn, Db, DbError};
use crate::domain::ephemeral::{Answer, Call, EphemeralOptions, PopRequest};

/// What a call needs besides the engine.
pub struct Env<'a> {
    /// The engine.
    pub engine: &'a Ephemeral,
    /// For declarations.
    pub db: &'a Db,
    /// Cancelled when the broker starts to stop: a parked pop answers at once.
    pub draining: &'a CancellationToken,
    /// This node's mesh id, named in the rows of [`Call::Held`].
    pub node: &'a str,
}

/// Runs `call` for `tenant` on this node.
pub async fn run(env: &Env<'_>, tenant: &str, call: Call) -> Answer {
    let key: QueueKey = (tenant.to_owned(), call.queue().to_owned());
    match call {
        Call::Configure { queue, options } => configure(env, key, &queue, options).await,
        Call::Reset { queue } => {
            let dropped = match env.engine.get(&key) {
                Some(q) => {
                    let dropped = q.lock().clear(env.engine.ctx().budget);
                    q.pushed.notify_waiters();
                    dropped
                }
                None => 0,
            };
            Answer::ok(200, json!({"queue": queue, "dropped": dropped}))
        }
        Call::Delete { queue } => {
            let stored = match conn(env.db).await {
                Ok(mut c) => declarations::forget(&mut c, &key.0, &key.1).await,
                Err(answer) => return answer,
            };
            let stored = match stored {
                Ok(stored) => stored,
                Err(e) => return unavailable(e),
            };
            let held = env.engine.remove(&key);
            Answer::ok(200, json!({"queue": queue, "deleted": stored || held}))
        }
        Call::Push {
            queue,
            partition,
            payloads,
        } => {
            let q = match load(env, key).await {
                Ok(q) => q,
                Err(answer) => return answer,
            };
            let pushed = q.lock().push(
                partition.as_deref().unwrap_or("Default"),
                &payloads,
                &env.engine.ctx(),
            );
            match pushed {
                Ok(()) => {
                    q.pushed.notify_waiters();
                    Answer::ok(200, json!({"queue": queue, "pushed": payloads.len()}))
                }
                Err(refusal) => refused(refusal),
            }
        }
        Call::Pop(pop) => self::pop(env, key, pop).await,
        Call::Ack { queue, group, acks } => {
            let held = env.engine.get(&key);
            let mut results = Vec::with_capacity(acks.len());
            let mut ready = false;
            for ack in &acks {
                let outcome = match &held {
                    Some(q) => q.lock().ack(&group, &ack.id, ack.status, &env.engine.ctx()),
                    None => super::ring::AckOutcome::Stale,
                };
                ready |= outcome == super::ring::AckOutcome::Redelivered;
                results.push(json!({"id": ack.id, "outcome": outcome.as_str()}));
            }
            if let (true, Some(q)) = (ready, &held) {
                q.pushed.notify_waiters();
            }
            Answer::ok(200, json!({"queue": queue, "results": results}))
        }
        Call::Held => Answer::ok(200, Value::Array(held(env.engine, tenant, env.node))),
        Call::Depth { queue } => {
            if let Some(q) = env.engine.get(&key) {
                return Answer::ok(200, q.lock().depth_json(&queue));
            }
            match declared(env.db, &key).await {
                Ok(Some(options)) => {
                    Answer::ok(200, Queue::new(options, true).lock().depth_json(&queue))
                }
                Ok(None) => Answer::error(
                    404,
                    "ephemeral_queue_not_found",
                    "queue",
                    format!("no ephemeral queue {queue:?}"),
                ),
                Err(answer) => answer,
            }
        }
    }
}

/// The queues this node holds for `tenant`, one row each with this node's gauges
/// ([`Call::Held`]).
pub fn held(engine: &Ephemeral, tenant: &str, node: &str) -> Vec<Value> {
    engine
        .of_tenant(tenant)
        .into_iter()
        .map(|(name, queue)| {
            let depth = queue.lock().depth_json(&name);
            let drops = depth["dropped"].as_u64().unwrap_or(0)
                + depth["expired"].as_u64().unwrap_or(0)
                + depth["retriesExhausted"].as_u64().unwrap_or(0);
            json!({"queue": name, "tier": "ephemeral", "declared": depth["declared"],
                   "node": node, "depth": depth["pending"], "bytes": depth["bytes"],
                   "partitions": depth["partitions"].as_array().map_or(0, Vec::len),
                   "groups": depth["groups"].as_array().map_or(0, Vec::len),
                   "drops": drops, "options": depth["options"]})
        })
        .collect()
}

/// `GET /api/v1/ephemeral/queues`: the tenant's declared queues and the rows of `held`
/// (what every node answered [`Call::Held`] with), a held row replacing the declaration's.
/// `unanswered` names the nodes that did not answer: their queues may be missing.
pub async fn queues(
    env: &Env<'_>,
    tenant: &str,
    held: Vec<Value>,
    unanswered: Vec<String>,
) -> Answer {
    let stored = match conn(env.db).await {
        Ok(mut c) => declarations::declarations(&mut c, tenant).await,
        Err(answer) => return answer,
    };
    let stored = match stored {
        Ok(stored) => stored,
        Err(e) => return unavailable(e),
    };
    let mut rows: std::collections::BTreeMap<String, Value> = std::collections::BTreeMap::new();
    for row in stored.as_array().into_iter().flatten() {
        if let Some(name) = row["queue"].as_str() {
            rows.insert(
                name.to_owned(),
                json!({"queue": name, "tier": "ephemeral", "declared": true, "node": null,
                       "depth": 0, "bytes": 0, "partitions": 0, "groups": 0, "drops": 0,
                       "options": row["options"]}),
            );
        }
    }
    for row in held {
        if let Some(name) = row["queue"].as_str() {
            rows.insert(name.to_owned(), row);
        }
    }
    let list: Vec<Value> = rows.into_values().collect();
    Answer::ok(
        200,
        json!({"count": list.len(), "queues": list, "unanswered": unanswered}),
    )
}

async fn configure(env: &Env<'_>, key: QueueKey, queue: &str, options: EphemeralOptions) -> Answer {
    let stored = options.to_json();
    let written = match conn(env.db).await {
        Ok(mut c) => declarations::declare(&mut c, &key.0, &key.1, &stored).await,
        Err(answer) => return answer,
    };
    if let Err(e) = written {
        return unavailable(e);
    }
    env.engine.declare(key, options);
    Answer::ok(
        201,
        json!({"queue": queue, "configured": true, "options": stored}),
    )
}

/// The queue, made from its stored declaration (or the defaults) if this node does not
/// hold it yet.
async fn load(env: &Env<'_>, key: QueueKey) -> Result<Arc<Queue>, Answer> {
    if let Some(queue) = env.engine.get(&key) {
        return Ok(queue);
    }
    let options = declared(env.db, &key).await?;
    let is_declared = options.is_some();
    Ok(env
        .engine
        .get_or_insert(key, options.unwrap_or_default(), is_declared))
}

async fn declared(db: &Db, key: &QueueKey) -> Result<Option<EphemeralOptions>, Answer> {
    let mut c = conn(db).await?;
    let stored = declarations::declaration(&mut c, &key.0, &key.1)
        .await
        .map_err(unavailable)?;
    Ok(stored.and_then(|value| EphemeralOptions::parse(Some(&value)).ok()))
}

/// A pooled connection for a declaration statement; none answers 503.
async fn conn(db: &Db) -> Result<Conn<'_>, Answer> {
    db.conn().await.map_err(unavailable)
}

/// The 503 of a declaration statement that failed (logged here, once).
fn unavailable(e: DbError) -> Answer {
    error!(error = ?e, "ephemeral declaration call failed");
    Answer::error(
        503,
        "unavailable",
        "database",
        "the database could not take the declaration call; nothing was changed",
    )
}

fn refused(refusal: Refusal) -> Answer {
    match refusal {
        Refusal::TooLarge => Answer::error(
            413,
            "too_large",
            "bounds",
            "the push alone is larger than the queue's maxBytes or maxLength (or the \
             broker's QUEEN_EPHEMERAL_MAX_BYTES); nothing was stored",
        ),
        Refusal::QueueFull => Answer::error(
            429,
            "queue_full",
            "bounds",
            "the queue is at its maxBytes or maxLength and its policy is reject; nothing \
             was stored; retry after the Retry-After seconds",
        ),
        Refusal::BrokerFull => Answer::error(
            429,
            "broker_full",
            "memory",
            "the broker holds QUEEN_EPHEMERAL_MAX_BYTES of ephemeral messages; nothing was \
             stored; retry after the Retry-After seconds",
        ),
    }
}

async fn pop(env: &Env<'_>, key: QueueKey, pop: PopRequest) -> Answer {
    let start = Instant::now();
    let deadline = start + Duration::from_millis(pop.wait_ms);
    let batch = pop.batch as usize;
    let mut messages: Vec<Delivered> = Vec::new();
    let mut window_end: Option<Instant> = None;
    loop {
        let queue = match load(env, key.clone()).await {
            Ok(q) => q,
            Err(answer) => return answer,
        };
        let notified = queue.pushed.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        let (taken, window) = {
            let mut state = queue.lock();
            let window = state.options.window_buffer;
            let taken = state.pop(
                pop.partition.as_deref(),
                &pop.group,
                batch - messages.len(),
                pop.auto_ack,
                &env.engine.ctx(),
            );
            (taken, window)
        };
        messages.extend(taken.messages);
        let now = Instant::now();
        if messages.len() >= batch || now >= deadline || env.draining.is_cancelled() {
            break;
        }
        if !messages.is_empty() {
            // Something is there: answer now, unless the queue's window lets a waiting
            // pop fatten its batch a little.
            let Some(window) = window else { break };
            if messages.len() >= window.count as usize {
                break;
            }
            let end = *window_end.get_or_insert(now + Duration::from_millis(window.ms));
            if now >= end {
                break;
            }
        }
        let mut wake = window_end.map_or(deadline, |end| end.min(deadline));
        if let Some(due) = taken.next_due {
            wake = wake.min(Instant::from_std(due));
        }
        tokio::select! {
            _ = &mut notified => {}
            _ = tokio::time::sleep_until(wake) => {}
            _ = env.draining.cancelled() => {}
        }
    }
    Answer {
        status: 200,
        body: pop_body(&pop.queue, &messages),
        retry_after: false,
    }
}

/// `{queue, messages: [{id, partition, payload, attempts}]}`, the payloads as pushed.
fn pop_body(queue: &str, messages: &[Delivered]) -> String {
    let mut body =
        String::with_capacity(64 + messages.iter().map(|m| m.payload.len() + 96).sum::<usize>());
    body.push_str("{\"queue\":");
    body.push_str(&Value::from(queue).to_string());
    body.push_str(",\"messages\":[");
    for (i, m) in messages.iter().enumerate() {
        if i > 0 {
            body.push(',');
        }
        let _ = write!(
            body,
            "{{\"id\":\"{}\",\"partition\":{},\"payload\":{},\"attempts\":{}}}",
            m.id,
            Value::from(&*m.partition),
            m.payload,
            m.attempts
        );
    }
    body.push_str("]}");
    body
}
