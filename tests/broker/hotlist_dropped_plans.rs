//! Pops whose clients leave at random moments (real HTTP clients giving up after a few
//! milliseconds, many at once, over many partitions and groups, while producers push)
//! leave every group actor's accounting clean: nothing lent, no reseed pending. Afterwards
//! well-behaved consumers still get every message exactly once.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::support::drain::fill;
use crate::support::fixtures::{configure, group_stats, metrics, TIMING};
use crate::support::{eventually, TestBroker};

const QUEUE: &str = "dropped-plans";
/// Bus-mode groups: each gets every message, and each has an actor of its own to leak.
const GROUPS: [&str; 4] = ["g0", "g1", "g2", "g3"];
const PARTITIONS: usize = 48;
/// Messages per partition pushed before the chaos; as many again arrive during it.
const BEFORE: usize = 10;
const DURING: usize = 10;
/// How long clients keep abandoning pops.
const CHAOS: Duration = Duration::from_secs(3);
/// Clients abandoning pops at once.
const ABANDONERS: usize = 16;
/// The queue's lease: what an abandoned delivery waits before it comes again.
const LEASE_SECONDS: u64 = 1;
/// The queue's retry budget. A lease that expires is one delivery attempt of the first
/// message it left undone, and past the budget that message is dead-lettered and the
/// cursor passes it (docs/pop.md): with the default of 3, a partition's head claimed by
/// abandoners four times over went to the dead letters and never reached the patient
/// consumers. The server keeps claiming for pops whose clients have gone until its backlog
/// is worked off, so how many times depends on its speed: seen on the Citus layout at a
/// load average of 9-17 (41 heads of group g0, docs/scale-out.md, part eight). The test
/// is about the actors' accounting and exactly-once delivery, not the budget.
const RETRY_LIMIT: u64 = 1_000;
/// How long a group's drain has to ack every message.
const DRAIN: Duration = Duration::from_secs(60);
/// How much longer the drain goes on for messages still missing after [`DRAIN`], so a
/// late message (acked in it) is told from a lost one (never acked).
const GRACE: Duration = Duration::from_secs(60);

/// Pops abandoned at random moments leave nothing lent and no reseed pending in any group
/// actor, and every message is then acked exactly once per group by patient consumers.
#[actix_rt::test]
async fn pops_abandoned_at_random_moments_leave_nothing_lent_or_reseeding_and_lose_no_message() {
    let _quiet = TIMING.lock().await;
    // Arrange: frequent reseeds, so many pops are handed a reseed to do.
    let b = Arc::new(
        TestBroker::start_with(&[("QUEEN_HOTLIST_RESEED_MS", "50"), ("DB_POOL_SIZE", "16")]).await,
    );
    configure(
        &b,
        QUEUE,
        json!({ "leaseTime": LEASE_SECONDS, "retryLimit": RETRY_LIMIT }),
    )
    .await;
    fill(&b, QUEUE, PARTITIONS, BEFORE).await;

    // Act: abandoners give up after 0.2 to 12 ms; a producer pushes meanwhile.
    let stop_at = Instant::now() + CHAOS;
    let abandoned = Arc::new(AtomicUsize::new(0));
    let answered = Arc::new(AtomicUsize::new(0));
    let abandoners: Vec<_> = (0..ABANDONERS)
        .map(|n| {
            tokio::spawn(abandon_pops(
                b.clone(),
                n as u64 + 1,
                stop_at,
                abandoned.clone(),
                answered.clone(),
            ))
        })
        .collect();
    for i in BEFORE..BEFORE + DURING {
        let items: Vec<Value> = (0..PARTITIONS)
            .map(|p| json!({"queue": QUEUE, "partition": format!("p{p}"), "payload": {"p": p, "i": i}}))
            .collect();
        let (status, body) = b.post("/api/v1/push", &json!({ "items": items })).await;
        assert!(status.is_success(), "push answered {status}: {body}");
        tokio::time::sleep(CHAOS / DURING as u32).await;
    }
    for a in abandoners {
        a.await.expect("abandoner task");
    }
    let (abandoned, answered) = (
        abandoned.load(Ordering::SeqCst),
        answered.load(Ordering::SeqCst),
    );
    eprintln!("pops abandoned: {abandoned}, answered before the client gave up: {answered}");

    // Assert: the accounting settles clean once the last check-in has arrived.
    let clean = eventually(Duration::from_secs(5), || async {
        let m = metrics(&b).await;
        let all: Vec<Value> = GROUPS
            .iter()
            .filter_map(|g| group_stats(&m, QUEUE, g))
            .collect();
        let settled = all.len() == GROUPS.len()
            && all
                .iter()
                .all(|g| g["lent"] == 0 && g["reseeding"] == false);
        settled.then_some(())
    })
    .await;
    assert!(
        clean.is_some(),
        "a group actor kept partitions lent or a reseed pending: {}",
        metrics(&b).await["groups"]
    );
    assert!(
        abandoned > 100,
        "too few pops were abandoned to test anything"
    );

    // Assert: patient consumers (a long lease of their own) ack every message exactly once
    // per group; what the abandoners were handed comes again when its 1 s lease expires.
    let total = PARTITIONS * (BEFORE + DURING);
    for group in GROUPS {
        let acked = drain_group(b.clone(), group, total).await;
        let mut per: HashMap<(u64, u64), usize> = HashMap::new();
        for (key, _) in &acked {
            *per.entry(*key).or_default() += 1;
        }
        let duplicates: usize = per.values().map(|n| n - 1).sum();
        let mut late: Vec<_> = acked
            .iter()
            .filter(|(_, at)| *at > DRAIN)
            .map(|(key, at)| (*key, at.as_millis()))
            .collect();
        late.sort();
        eprintln!(
            "{group}: {} acked deliveries, {} distinct, {duplicates} duplicates, {} after {DRAIN:?}: {late:?}",
            acked.len(),
            per.len(),
            late.len()
        );
        assert_eq!(duplicates, 0, "{group}: a message was acked twice");
        if per.len() < total {
            let missing: Vec<(u64, u64)> = (0..PARTITIONS as u64)
                .flat_map(|p| (0..(BEFORE + DURING) as u64).map(move |i| (p, i)))
                .filter(|key| !per.contains_key(key))
                .collect();
            panic!(
                "{group}: messages lost (none came within {:?}): {missing:?}; their cursors: {}; \
                 the group's dead letters: {}",
                DRAIN + GRACE,
                cursors(&b, group, &missing).await,
                dead_letters(&b, group).await
            );
        }
        assert!(late.is_empty(), "{group}: messages came late: {late:?}");
        let (status, body) = b
            .get(&format!(
                "/api/v1/pop/queue/{QUEUE}?consumerGroup={group}&batch=10"
            ))
            .await;
        assert_eq!(status, StatusCode::NO_CONTENT, "{group}: left over: {body}");
    }
}

/// The group's dead letters of the queue as (partition, offset, transaction id, error),
/// as text: a message whose lease-expiry attempts spent its retry budget is filed there
/// and the cursor passes it.
async fn dead_letters(b: &TestBroker, group: &str) -> String {
    let rows = b
        .sql()
        .await
        .query(
            "SELECT p.name, d.message_offset, d.transaction_id, d.error_message
             FROM queen.dead_letters d JOIN queen.log_partitions p ON p.id = d.partition_id
             WHERE d.consumer_group = $1 ORDER BY d.id",
            &[&group],
        )
        .await
        .expect("read the dead letters");
    let all: Vec<String> = rows
        .iter()
        .map(|r| {
            format!(
                "{}@{} {} {:?}",
                r.get::<_, String>(0),
                r.get::<_, i64>(1),
                r.get::<_, String>(2),
                r.get::<_, Option<String>>(3)
            )
        })
        .collect();
    format!("{} {all:?}", all.len())
}

/// The group's cursor rows of the partitions holding `missing`, as text, to tell a
/// message the cursor passed (acked yet unseen: lost) from one still ahead of it.
async fn cursors(b: &TestBroker, group: &str, missing: &[(u64, u64)]) -> String {
    let mut names: Vec<String> = missing.iter().map(|(p, _)| format!("p{p}")).collect();
    names.dedup();
    let rows = b
        .sql()
        .await
        .query(
            "SELECT p.name, p.last_offset, c.committed, c.batch_end, c.worker_id,
                    c.lease_expires_at::text, c.acked_ahead::text
             FROM queen.log_partitions p JOIN queen.queues q ON q.id = p.queue_id
             LEFT JOIN queen.log_consumers c
               ON c.partition_id = p.id AND c.consumer_group = $2
             WHERE q.name = $1 AND p.name = ANY($3)",
            &[&QUEUE, &group, &names],
        )
        .await
        .expect("read the cursors");
    rows.iter()
        .map(|r| {
            format!(
                "{}: last {} committed {:?} batch_end {:?} lease {:?} until {:?} ahead {:?}",
                r.get::<_, String>(0),
                r.get::<_, i64>(1),
                r.get::<_, Option<i64>>(2),
                r.get::<_, Option<i64>>(3),
                r.get::<_, Option<String>>(4),
                r.get::<_, Option<String>>(5),
                r.get::<_, Option<String>>(6),
            )
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// Pops with random shapes and gives each up after a random 0.2 to 12 ms (the request's
/// own timeout closes the connection), never acking what arrives in time.
async fn abandon_pops(
    b: Arc<TestBroker>,
    seed: u64,
    stop_at: Instant,
    abandoned: Arc<AtomicUsize>,
    answered: Arc<AtomicUsize>,
) {
    // xorshift64: varied per task, no extra crate.
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    let mut next = move |below: u64| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x % below
    };
    let http = reqwest::Client::new();
    while Instant::now() < stop_at {
        let group = GROUPS[next(GROUPS.len() as u64) as usize];
        let url = b.url(&format!(
            "/api/v1/pop/queue/{QUEUE}?consumerGroup={group}&batch={}&partitions={}&wait={}&timeout=2000",
            1 + next(5),
            1 + next(4),
            next(2) == 0,
        ));
        let give_up = Duration::from_micros(200 + next(11_800));
        match http.get(url).timeout(give_up).send().await {
            Ok(response) => {
                let status = response.status();
                assert!(
                    status == StatusCode::OK || status == StatusCode::NO_CONTENT,
                    "pop answered {status}"
                );
                answered.fetch_add(1, Ordering::SeqCst);
            }
            Err(e) if e.is_timeout() => {
                abandoned.fetch_add(1, Ordering::SeqCst);
            }
            Err(e) => panic!("pop failed other than by the client's timeout: {e}"),
        }
    }
}

/// Four patient consumers of `group` pop (with a 30 s lease of their own) and ack until
/// `total` acks succeeded, for [`DRAIN`] and then up to [`GRACE`] more while some are
/// missing; returns every acked (partition, sequence) with when its ack succeeded after
/// the drain began, duplicates included. A message acked only in the grace is late, one
/// never acked is lost: the test tells the two apart.
async fn drain_group(
    b: Arc<TestBroker>,
    group: &'static str,
    total: usize,
) -> Vec<((u64, u64), Duration)> {
    let acked = Arc::new(AtomicUsize::new(0));
    let start = Instant::now();
    let deadline = start + DRAIN + GRACE;
    let path = format!(
        "/api/v1/pop/queue/{QUEUE}?consumerGroup={group}&batch=10&partitions=2\
         &wait=true&timeout=500&leaseSeconds=30"
    );
    let consumers: Vec<_> = (0..4)
        .map(|_| {
            let (b, acked, path) = (b.clone(), acked.clone(), path.clone());
            tokio::spawn(async move {
                let mut got = Vec::new();
                while acked.load(Ordering::SeqCst) < total && Instant::now() < deadline {
                    let messages = b.pop_messages(&path).await;
                    if messages.is_empty() {
                        continue;
                    }
                    let answers = b.ack_all(&messages, "completed", Some(group)).await;
                    let at = start.elapsed();
                    for (m, a) in messages.iter().zip(&answers) {
                        assert_eq!(a["success"], true, "{group}: an ack was refused: {a}");
                        let key = (
                            m["data"]["p"].as_u64().expect("p"),
                            m["data"]["i"].as_u64().expect("i"),
                        );
                        got.push((key, at));
                    }
                    acked.fetch_add(messages.len(), Ordering::SeqCst);
                }
                got
            })
        })
        .collect();
    let mut all = Vec::new();
    for c in consumers {
        all.extend(c.await.expect("consumer task"));
    }
    all
}
