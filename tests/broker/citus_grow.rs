//! Growing a Citus cluster under load: a worker is added and the shards rebalanced
//! (`citus_rebalance_start`, then `citus_rebalance_wait`) while producers and consumers
//! run against a real broker over HTTP. Needs the Citus test mode (`QUEEN_TEST_CITUS`, see
//! bench/citus-tests.sh); without it the test says so and passes.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::{json, Value};
use tokio_postgres::{Client, NoTls};

use crate::support::fixtures::configure;
use crate::support::{self, postgres, TestBroker};

const QUEUE: &str = "grow";
const PRODUCERS: usize = 4;
const CONSUMERS: usize = 4;
const PARTITIONS: usize = 32;
/// Messages per push request (all to one partition).
const BATCH: usize = 5;
/// Between a producer's requests.
const PAUSE: Duration = Duration::from_millis(20);
/// Short enough that a delivery whose ack was lost comes back within the drain.
const LEASE_SECONDS: u64 = 10;

/// One message: (partition, sequence within the partition).
type Key = (u64, u64);

/// What the clients saw, shared by every task.
#[derive(Default)]
struct Seen {
    /// Every message a push answered as stored (`queued`, or `duplicate` for a retry of a
    /// push whose first answer was lost).
    stored: Mutex<BTreeSet<Key>>,
    /// When (seconds since the test's start) each stored message's push was answered, and
    /// whether as `duplicate`: read when a stored message is lost.
    answered: Mutex<BTreeMap<Key, (f64, bool)>>,
    /// Deliveries per message.
    delivered: Mutex<BTreeMap<Key, u32>>,
    /// Messages one of whose deliveries was not confirmed by its ack (the ack answered 503,
    /// or refused the item): a lease expiry may deliver these again.
    unconfirmed: Mutex<BTreeSet<Key>>,
    /// Redeliveries of a message none of whose earlier deliveries had an unconfirmed ack.
    unexplained: Mutex<Vec<Key>>,
    /// When (seconds since the test's start) a delivery's ack was last answered as done,
    /// and when a redelivery in `unexplained` came: read when there are such.
    confirmed_at: Mutex<BTreeMap<Key, f64>>,
    redelivered_at: Mutex<BTreeMap<Key, f64>>,
    /// Answers other than success or a 503: (what, status, body).
    errors: Mutex<Vec<(String, StatusCode, Value)>>,
    push_503: AtomicU64,
    pop_503: AtomicU64,
    ack_503: AtomicU64,
    push_requests: AtomicU64,
}

impl Seen {
    fn error(&self, what: &str, status: StatusCode, body: Value) {
        self.errors
            .lock()
            .unwrap()
            .push((what.to_owned(), status, body));
    }
}

async fn connect(config: &tokio_postgres::Config) -> Client {
    let (client, connection) = config.connect(NoTls).await.unwrap();
    tokio::spawn(connection);
    client
}

/// One producer: pushes `BATCH` numbered messages at a time to each of its partitions in
/// turn until `stop`, retrying a request answered 503 (the same transaction ids, so a retry
/// of a push that was stored after all answers `duplicate`).
async fn produce(
    b: Arc<TestBroker>,
    k: usize,
    seen: Arc<Seen>,
    stop: Arc<AtomicBool>,
    started: Instant,
) {
    let mine: Vec<usize> = (k..PARTITIONS).step_by(PRODUCERS).collect();
    let mut next = vec![0u64; PARTITIONS];
    'run: while !stop.load(Ordering::SeqCst) {
        for &p in &mine {
            let first = next[p];
            let items: Vec<Value> = (first..first + BATCH as u64)
                .map(|i| {
                    json!({"queue": QUEUE, "partition": format!("p{p}"),
                           "transactionId": format!("m-{p}-{i}"), "payload": {"p": p, "i": i}})
                })
                .collect();
            loop {
                seen.push_requests.fetch_add(1, Ordering::Relaxed);
                let (status, body) = b.post("/api/v1/push", &json!({ "items": items })).await;
                if status == StatusCode::SERVICE_UNAVAILABLE {
                    seen.push_503.fetch_add(1, Ordering::Relaxed);
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
                if !status.is_success() {
                    seen.error("push", status, body);
                    break 'run;
                }
                let answers = body.as_array().cloned().unwrap_or_default();
                let at = started.elapsed().as_secs_f64();
                let mut stored = seen.stored.lock().unwrap();
                let mut answered = seen.answered.lock().unwrap();
                for (i, answer) in (first..).zip(&answers) {
                    match answer["status"].as_str() {
                        Some(status @ ("queued" | "duplicate")) => {
                            stored.insert((p as u64, i));
                            answered.insert((p as u64, i), (at, status == "duplicate"));
                        }
                        _ => {
                            drop((stored, answered));
                            seen.error("push item", status, answer.clone());
                            break 'run;
                        }
                    }
                }
                break;
            }
            next[p] += BATCH as u64;
            // A steady load, not a flood: the rebalancer shares the cores with it.
            tokio::time::sleep(PAUSE).await;
            if stop.load(Ordering::SeqCst) {
                break;
            }
        }
    }
}

/// One consumer: wildcard pops and acks until `finish`, retrying a 503; records every
/// delivery and every ack that did not confirm.
async fn consume(b: Arc<TestBroker>, seen: Arc<Seen>, finish: Arc<AtomicBool>, started: Instant) {
    let path = format!("/api/v1/pop/queue/{QUEUE}?batch=20&partitions=2&wait=true&timeout=500");
    while !finish.load(Ordering::SeqCst) {
        let (status, body) = b.get(&path).await;
        match status {
            StatusCode::NO_CONTENT => continue,
            StatusCode::OK => {}
            StatusCode::SERVICE_UNAVAILABLE => {
                seen.pop_503.fetch_add(1, Ordering::Relaxed);
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
            other => {
                seen.error("pop", other, body);
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        }
        let messages = body["messages"].as_array().cloned().unwrap_or_default();
        let keys: Vec<Key> = messages
            .iter()
            .map(|m| {
                (
                    m["data"]["p"].as_u64().expect("p"),
                    m["data"]["i"].as_u64().expect("i"),
                )
            })
            .collect();
        {
            let mut delivered = seen.delivered.lock().unwrap();
            let unconfirmed = seen.unconfirmed.lock().unwrap();
            for key in &keys {
                let count = delivered.entry(*key).or_insert(0);
                *count += 1;
                if *count > 1 && !unconfirmed.contains(key) {
                    seen.unexplained.lock().unwrap().push(*key);
                    let at = started.elapsed().as_secs_f64();
                    seen.redelivered_at.lock().unwrap().insert(*key, at);
                }
            }
        }
        let acks: Vec<Value> = messages
            .iter()
            .map(|m| {
                json!({"transactionId": m["transactionId"], "partitionId": m["partitionId"],
                       "leaseId": m["leaseId"], "status": "completed"})
            })
            .collect();
        let (status, body) = b
            .post("/api/v1/ack/batch", &json!({ "acknowledgments": acks }))
            .await;
        let refused: Vec<Key> = match status {
            StatusCode::OK => {
                let answers = body.as_array().cloned().unwrap_or_default();
                keys.iter()
                    .enumerate()
                    .filter(|(i, _)| answers.get(*i).map_or(true, |a| a["success"] != true))
                    .map(|(_, k)| *k)
                    .collect()
            }
            StatusCode::SERVICE_UNAVAILABLE => {
                seen.ack_503.fetch_add(1, Ordering::Relaxed);
                keys.clone()
            }
            other => {
                seen.error("ack", other, body);
                keys.clone()
            }
        };
        let at = started.elapsed().as_secs_f64();
        let mut confirmed_at = seen.confirmed_at.lock().unwrap();
        for key in keys.iter().filter(|k| !refused.contains(k)) {
            confirmed_at.insert(*key, at);
        }
        drop(confirmed_at);
        seen.unconfirmed.lock().unwrap().extend(refused);
    }
}

/// Until `finish`, polls where each shard of `queen.log_segments` is placed; answers per
/// shard when (seconds since the test's start) the coordinator's metadata was first seen
/// placing it on another worker, and from which port to which.
async fn watch_placements(
    pg: tokio_postgres::Config,
    started: Instant,
    finish: Arc<AtomicBool>,
) -> BTreeMap<i64, (f64, i32, i32)> {
    let client = connect(&pg).await;
    let mut placed: BTreeMap<i64, i32> = BTreeMap::new();
    let mut switched = BTreeMap::new();
    while !finish.load(Ordering::SeqCst) {
        let rows = client
            .query(
                "SELECT shardid, nodeport FROM citus_shards
                 WHERE table_name = 'queen.log_segments'::regclass",
                &[],
            )
            .await
            .unwrap_or_default();
        let at = started.elapsed().as_secs_f64();
        for row in rows {
            let (shard, port): (i64, i32) = (row.get(0), row.get(1));
            match placed.insert(shard, port) {
                Some(old) if old != port => {
                    switched.insert(shard, (at, old, port));
                }
                _ => {}
            }
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    switched
}

/// For up to ten lost messages: when their push was answered (and whether as
/// `duplicate`), their partition's shard and when it moved, and the partition's
/// `last_offset` against the messages stored in it (offsets count from 1, so the two are
/// equal unless a stored write is missing from the partition's counter).
async fn describe_lost(
    client: &Client,
    seen: &Seen,
    stored: &BTreeSet<Key>,
    switched: &BTreeMap<i64, (f64, i32, i32)>,
) -> String {
    let answered = seen.answered.lock().unwrap().clone();
    let mut lines = Vec::new();
    for key in stored
        .iter()
        .filter(|k| !seen.delivered.lock().unwrap().contains_key(k))
        .take(10)
    {
        let (last_offset, shard) = partition_state(client, key.0).await;
        let in_partition = stored.iter().filter(|k| k.0 == key.0).count();
        lines.push(format!(
            "{key:?} answered {:?} (at s, duplicate), shard {shard:?} moved {:?} \
             (at s, from, to), last_offset {last_offset:?} for {in_partition} stored",
            answered.get(key),
            shard.and_then(|s| switched.get(&s)),
        ));
    }
    lines.join("; ")
}

/// Partition `p{partition}`'s `last_offset` and the shard holding it.
async fn partition_state(client: &Client, partition: u64) -> (Option<i64>, Option<i64>) {
    let row = client
        .query_opt(
            "SELECT p.last_offset,
                    get_shard_id_for_distribution_column('queen.log_segments', p.id)
             FROM queen.log_partition_names n JOIN queen.queues q ON q.id = n.queue_id
             JOIN queen.log_partitions p ON p.id = n.id
             WHERE q.name = $1 AND n.name = $2",
            &[&QUEUE, &format!("p{partition}")],
        )
        .await
        .ok()
        .flatten();
    match row {
        Some(row) => (row.get(0), row.get(1)),
        None => (None, None),
    }
}

/// For up to ten messages delivered again after every ack of theirs had confirmed: when
/// the last ack confirmed and when the message came again (seconds since the test's
/// start), and its partition's shard and when that moved.
async fn describe_unexplained(
    client: &Client,
    seen: &Seen,
    switched: &BTreeMap<i64, (f64, i32, i32)>,
) -> String {
    let unexplained = seen.unexplained.lock().unwrap().clone();
    let confirmed_at = seen.confirmed_at.lock().unwrap().clone();
    let redelivered_at = seen.redelivered_at.lock().unwrap().clone();
    let mut lines = Vec::new();
    for key in unexplained.iter().take(10) {
        let (_, shard) = partition_state(client, key.0).await;
        lines.push(format!(
            "{key:?} ack confirmed at {:?} s, delivered again at {:?} s, shard {shard:?} \
             moved {:?} (at s, from, to)",
            confirmed_at.get(key),
            redelivered_at.get(key),
            shard.and_then(|s| switched.get(&s)),
        ));
    }
    lines.join("; ")
}

/// Ports of the workers holding the shards of `queen.log_segments`, with the count of each.
async fn shards_per_worker(client: &Client) -> BTreeMap<i32, i64> {
    client
        .query(
            "SELECT nodeport, count(*) FROM citus_shards
             WHERE table_name = 'queen.log_segments'::regclass GROUP BY 1",
            &[],
        )
        .await
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect()
}

/// Ports of the workers holding the queue's partitions.
async fn workers_of_partitions(client: &Client) -> BTreeSet<i32> {
    client
        .query(
            "SELECT s.nodeport
             FROM queen.log_partition_names p JOIN queen.queues q ON q.id = p.queue_id
             JOIN citus_shards s
               ON s.table_name = 'queen.log_segments'::regclass
              AND s.shardid = get_shard_id_for_distribution_column('queen.log_segments', p.id)
             WHERE q.name = $1",
            &[&QUEUE],
        )
        .await
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect()
}

/// Four producers and four wildcard consumers run over 32 partitions while a third worker
/// joins and `citus_rebalance_start` moves shards to it: every message a push answered as
/// stored is delivered, a message is delivered again only after an ack that did not
/// confirm (the lease expiry then hands it out again), the only errors are 503s the
/// clients retried, and afterwards the queue's partitions sit on all three workers.
#[actix_rt::test]
async fn a_worker_added_and_shards_rebalanced_under_load_lose_nothing() {
    if support::citus::script().is_none() {
        eprintln!("not in the Citus test mode (QUEEN_TEST_CITUS): nothing to check");
        return;
    }
    // Arrange: a broker on a coordinator + 2 workers, the queue's partitions on both. The
    // tables are laid out in 8 shards each (`citus.shard_count`, which the layout reads),
    // not Citus's default 32: the rebalance then moves a few shard groups rather than
    // twenty (each a logical-replication copy and catch-up, 149 s in all under this
    // load), and each move still runs under the load.
    let pg = postgres::fresh_database().await;
    support::citus::set_on_every_node(&pg, "citus.shard_count = 8").await;
    // The test cluster runs with `synchronous_commit = off` (NODE_SETTINGS), under which
    // a shard move loses the commits of its last moments on the old worker: Citus's final
    // catch-up waits for the source's `pg_current_wal_lsn()`, the WAL written so far,
    // which an asynchronous commit's record may not have reached yet. Seen here as a
    // push answered `queued` 0.3 s before its shard's switch and missing from the shard's
    // new worker (docs/scale-out.md, "Adding a worker under load"). Production runs with
    // PostgreSQL's default, `on`; so does this database, on every node.
    support::citus::set_on_every_node(&pg, "synchronous_commit = on").await;
    let broker = Arc::new(TestBroker::start_on(pg.clone(), &[("DB_POOL_SIZE", "30")]).await);
    configure(&broker, QUEUE, json!({ "leaseTime": LEASE_SECONDS })).await;
    let client = connect(&pg).await;
    let seen = Arc::new(Seen::default());
    let (stop, finish) = (
        Arc::new(AtomicBool::new(false)),
        Arc::new(AtomicBool::new(false)),
    );
    let started = Instant::now();
    let producers: Vec<_> = (0..PRODUCERS)
        .map(|k| {
            tokio::spawn(produce(
                broker.clone(),
                k,
                seen.clone(),
                stop.clone(),
                started,
            ))
        })
        .collect();
    let consumers: Vec<_> = (0..CONSUMERS)
        .map(|_| {
            tokio::spawn(consume(
                broker.clone(),
                seen.clone(),
                finish.clone(),
                started,
            ))
        })
        .collect();
    let watcher = tokio::spawn(watch_placements(pg.clone(), started, finish.clone()));
    tokio::time::sleep(Duration::from_secs(3)).await;
    let before = shards_per_worker(&client).await;

    // Act: a third worker joins, and the rebalancer moves shards to it under the load.
    let grow_started = Instant::now();
    let port = support::citus::add_worker(&pg).await;
    let job: i64 = client
        .query_one("SELECT citus_rebalance_start()", &[])
        .await
        .expect("the rebalance starts")
        .get(0);
    client
        .batch_execute("SELECT citus_rebalance_wait()")
        .await
        .expect("the rebalance finishes");
    let grow_time = grow_started.elapsed();
    let (state, moves): (String, i64) = {
        let row = client
            .query_one(
                "SELECT j.state::text,
                        (SELECT count(*) FROM pg_dist_background_task t
                         WHERE t.job_id = j.job_id AND t.command LIKE '%citus_move_shard%')
                 FROM pg_dist_background_job j WHERE j.job_id = $1",
                &[&job],
            )
            .await
            .unwrap();
        (row.get(0), row.get(1))
    };
    tokio::time::sleep(Duration::from_secs(3)).await;
    stop.store(true, Ordering::SeqCst);
    for producer in producers {
        producer.await.expect("producer task");
    }
    let stored = seen.stored.lock().unwrap().clone();
    // Drain: until every stored message was delivered, or two lease times without.
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let missing = {
            let delivered = seen.delivered.lock().unwrap();
            stored.iter().filter(|k| !delivered.contains_key(k)).count()
        };
        if missing == 0 || Instant::now() > deadline {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    // Leases of unconfirmed acks expire within LEASE_SECONDS: let them come back.
    tokio::time::sleep(Duration::from_secs(LEASE_SECONDS + 2)).await;
    finish.store(true, Ordering::SeqCst);
    for consumer in consumers {
        consumer.await.expect("consumer task");
    }
    let switched = watcher.await.expect("placement watcher");
    let after = shards_per_worker(&client).await;
    let lost_detail = describe_lost(&client, &seen, &stored, &switched).await;
    let unexplained_detail = describe_unexplained(&client, &seen, &switched).await;
    let spread = workers_of_partitions(&client).await;

    // Assert, after printing the figures.
    let delivered = seen.delivered.lock().unwrap().clone();
    let lost: Vec<&Key> = stored
        .iter()
        .filter(|k| !delivered.contains_key(k))
        .collect();
    let redeliveries: u32 = delivered.values().map(|n| n - 1).sum();
    let unconfirmed = seen.unconfirmed.lock().unwrap().len();
    let unexplained = seen.unexplained.lock().unwrap().clone();
    let errors = seen.errors.lock().unwrap().clone();
    eprintln!(
        "citus grow: {} messages stored in {} push requests, {} delivered ({} redeliveries, \
         {} deliveries with an unconfirmed ack), {} lost; rebalance job {job} {state}: {moves} \
         shard moves in {:.1} s (worker :{port} added), whole run {:.1} s; 503s: push {}, \
         pop {}, ack {}; other errors: {}; log_segments shards per worker before {before:?}, \
         after {after:?}; lost, e.g. {:?}; delivered again with every ack confirmed, e.g. \
         {:?}; the lost: {lost_detail}; delivered again: {unexplained_detail}",
        stored.len(),
        seen.push_requests.load(Ordering::Relaxed),
        delivered.len(),
        redeliveries,
        unconfirmed,
        lost.len(),
        grow_time.as_secs_f64(),
        started.elapsed().as_secs_f64(),
        seen.push_503.load(Ordering::Relaxed),
        seen.pop_503.load(Ordering::Relaxed),
        seen.ack_503.load(Ordering::Relaxed),
        errors.len(),
        &lost[..lost.len().min(10)],
        &unexplained[..unexplained.len().min(10)],
    );
    assert!(errors.is_empty(), "answers other than 503: {errors:?}");
    assert_eq!(state, "finished", "the rebalance job");
    assert!(moves > 0, "the rebalance moved nothing");
    assert!(
        after.get(&i32::from(port)).copied().unwrap_or(0) > 0,
        "no shard on the new worker: {after:?}"
    );
    assert!(spread.contains(&i32::from(port)), "{spread:?}");
    assert!(!stored.is_empty());
    assert!(
        lost.is_empty(),
        "{} stored messages never delivered, e.g. {:?}",
        lost.len(),
        &lost[..lost.len().min(10)]
    );
    assert!(
        unexplained.is_empty(),
        "delivered again with every ack confirmed: {unexplained:?}"
    );
    let strays: Vec<&Key> = delivered.keys().filter(|k| !stored.contains(k)).collect();
    assert!(
        strays.is_empty(),
        "delivered but never answered as stored: {strays:?}"
    );
}
