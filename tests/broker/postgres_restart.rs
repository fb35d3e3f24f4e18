//! A PostgreSQL restart under load, on a private server this test stops and starts: four
//! producers push, three consumers pop with leases and ack, and long-polls are parked, while
//! the server is down for a few seconds. Nothing answered as stored is lost; a message comes
//! twice only when an ack of it failed (its lease expired); every failure is a 503 JSON error
//! that names the connection (never a 500); and requests sent once the server is back, on
//! pooled connections that died while idle, succeed.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use queen::db::embedded::{EmbeddedOptions, EmbeddedPostgres};
use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::support::fixtures::configure;
use crate::support::{free_port, read, TestBroker};

const QUEUE: &str = "restart";
const PARTITIONS: u64 = 8;
const PRODUCERS: u64 = 4;
const CONSUMERS: usize = 3;
const PUSH_BATCH: u64 = 10;
/// How long the server stays down.
const DOWN: Duration = Duration::from_secs(3);
/// Short, so a message whose ack failed comes back within the test.
const LEASE_SECS: u64 = 4;

/// A PostgreSQL server of this test alone, so stopping it disturbs no other test.
struct PrivatePostgres {
    options: EmbeddedOptions,
    server: Option<EmbeddedPostgres>,
    _dir: tempfile::TempDir,
}

impl PrivatePostgres {
    fn start() -> Self {
        let dir = tempfile::Builder::new()
            .prefix("queen-restart-")
            .tempdir_in("/tmp")
            .expect("a folder");
        fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o755)).unwrap();
        let setting = |k: &str, v: &str| (k.to_owned(), v.to_owned());
        let options = EmbeddedOptions {
            data_dir: dir.path().join("data"),
            port: free_port(),
            user: "queen".to_owned(),
            bin_dir: std::env::var_os("QUEEN_PG_BIN_DIR").map(PathBuf::from),
            server_settings: vec![setting("fsync", "off"), setting("max_connections", "100")],
        };
        let server = EmbeddedPostgres::start(options.clone()).expect("the private server starts");
        Self {
            options,
            server: Some(server),
            _dir: dir,
        }
    }

    fn config(&self) -> tokio_postgres::Config {
        self.server.as_ref().expect("running").pg_config("postgres")
    }

    /// A fast shutdown (every session is ended), `down` of nothing, and a start.
    fn restart(&mut self, down: Duration) {
        let mut server = self.server.take().expect("running");
        server.stop().expect("the server stops");
        drop(server);
        std::thread::sleep(down);
        self.server = Some(EmbeddedPostgres::start(self.options.clone()).expect("it starts again"));
    }
}

impl Drop for PrivatePostgres {
    fn drop(&mut self) {
        if let Some(server) = self.server.take() {
            let _ = server.stop_immediate();
        }
    }
}

/// Every answer that was not a success, with when its request was sent.
#[derive(Default)]
struct Failures {
    seen: Mutex<Vec<(Instant, &'static str, StatusCode, Value)>>,
}

impl Failures {
    fn note(&self, sent: Instant, what: &'static str, status: StatusCode, body: Value) {
        self.seen.lock().unwrap().push((sent, what, status, body));
    }
}

/// Sends one request; a 2xx answer is returned, anything else is noted and `None`.
async fn send(
    failures: &Failures,
    what: &'static str,
    request: reqwest::RequestBuilder,
) -> Option<(StatusCode, Value)> {
    let sent = Instant::now();
    match request.send().await {
        Ok(response) => {
            let (status, body) = read(response).await;
            if status.is_success() {
                return Some((status, body));
            }
            failures.note(sent, what, status, body);
        }
        Err(error) => failures.note(
            sent,
            what,
            StatusCode::IM_A_TEAPOT,
            json!(format!("transport error: {error}")),
        ),
    }
    None
}

/// Pushes batches of numbered messages (one transaction id each) until `stop`, re-sending a
/// failed batch unchanged until it is answered, as the published clients do; returns the
/// numbers answered as stored (queued, or duplicate of an earlier try that did commit).
async fn produce(
    b: Arc<TestBroker>,
    producer: u64,
    stop: Arc<AtomicBool>,
    failures: Arc<Failures>,
) -> Vec<u64> {
    let mut stored = Vec::new();
    let mut batch = 0u64;
    while !stop.load(Ordering::Relaxed) {
        let first = (producer * 1_000_000) + batch * PUSH_BATCH;
        let items: Vec<Value> = (first..first + PUSH_BATCH)
            .map(|n| {
                json!({
                    "queue": QUEUE,
                    "partition": format!("p{}", batch % PARTITIONS),
                    "payload": { "n": n },
                    "transactionId": format!("t{n}"),
                })
            })
            .collect();
        let body = json!({ "items": items });
        let deadline = Instant::now() + Duration::from_secs(60);
        let answers = loop {
            let request = b.http.post(b.url("/api/v1/push")).json(&body);
            if let Some((_, answer)) = send(&failures, "push", request).await {
                break answer;
            }
            assert!(Instant::now() < deadline, "a push never succeeded");
            tokio::time::sleep(Duration::from_millis(200)).await;
        };
        let answers = answers.as_array().expect("push answers an array").clone();
        assert_eq!(answers.len() as u64, PUSH_BATCH);
        for (k, answer) in answers.iter().enumerate() {
            let status = answer["status"].as_str().unwrap_or_default();
            assert!(
                status == "queued" || status == "duplicate",
                "push item answered {answer}"
            );
            stored.push(first + k as u64);
        }
        batch += 1;
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    stored
}

/// What the consumers saw: every delivery, and the numbers whose ack failed.
#[derive(Default)]
struct Seen {
    deliveries: Mutex<Vec<u64>>,
    failed_acks: Mutex<BTreeSet<u64>>,
    distinct: AtomicU64,
}

/// Pops leased batches and acks each until `stop`; an ack that fails is retried once, then
/// left to its lease (the message comes again).
async fn consume(
    b: Arc<TestBroker>,
    stop: Arc<AtomicBool>,
    failures: Arc<Failures>,
    seen: Arc<Seen>,
) {
    let path = format!("/api/v1/pop/queue/{QUEUE}?batch=20&wait=true&timeout=1000");
    let mut distinct = BTreeSet::new();
    while !stop.load(Ordering::Relaxed) {
        let Some((status, body)) = send(&failures, "pop", b.http.get(b.url(&path))).await else {
            tokio::time::sleep(Duration::from_millis(100)).await;
            continue;
        };
        if status == StatusCode::NO_CONTENT {
            continue;
        }
        let messages = body["messages"].as_array().expect("messages").clone();
        let numbers: Vec<u64> = messages
            .iter()
            .map(|m| m["data"]["n"].as_u64().expect("a numbered payload"))
            .collect();
        seen.deliveries.lock().unwrap().extend(&numbers);
        let acks: Vec<Value> = messages
            .iter()
            .map(|m| {
                json!({
                    "transactionId": m["transactionId"],
                    "partitionId": m["partitionId"],
                    "leaseId": m["leaseId"],
                    "status": "completed",
                })
            })
            .collect();
        let body = json!({ "acknowledgments": acks });
        let mut acked = false;
        for _ in 0..2 {
            let request = b.http.post(b.url("/api/v1/ack/batch")).json(&body);
            if let Some((_, answers)) = send(&failures, "ack", request).await {
                let answers = answers.as_array().expect("ack answers").clone();
                acked = answers.iter().all(|a| a["success"] == true);
                break;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        if !acked {
            seen.failed_acks.lock().unwrap().extend(&numbers);
        }
        for n in numbers {
            if distinct.insert(n) {
                seen.distinct.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}

/// Long-polls on an empty queue, parked while the server goes down: each must answer
/// 204 or a 503 within its timeout, never a 500 or a hang.
async fn park(b: Arc<TestBroker>, failures: Arc<Failures>) {
    let path = "/api/v1/pop/queue/parked?wait=true&timeout=6000";
    let started = Instant::now();
    let answered = send(&failures, "parked pop", b.http.get(b.url(path))).await;
    if let Some((status, body)) = answered {
        assert_eq!(status, StatusCode::NO_CONTENT, "{body}");
    }
    assert!(
        started.elapsed() < Duration::from_secs(12),
        "a parked pop answered after {:?}",
        started.elapsed()
    );
}

#[actix_rt::test]
async fn a_postgres_restart_under_load_loses_nothing_and_answers_503() {
    // Arrange: a broker whose pool gives up within a second, so requests meet the outage.
    let mut server = tokio::task::spawn_blocking(PrivatePostgres::start)
        .await
        .unwrap();
    let b =
        Arc::new(TestBroker::start_on(server.config(), &[("QUEEN_POOL_TIMEOUT_MS", "1000")]).await);
    configure(&b, QUEUE, json!({ "leaseTime": LEASE_SECS })).await;
    let failures = Arc::new(Failures::default());
    let seen = Arc::new(Seen::default());
    let stop_producers = Arc::new(AtomicBool::new(false));
    let stop_consumers = Arc::new(AtomicBool::new(false));
    let producers: Vec<_> = (0..PRODUCERS)
        .map(|p| {
            tokio::spawn(produce(
                b.clone(),
                p,
                stop_producers.clone(),
                failures.clone(),
            ))
        })
        .collect();
    let consumers: Vec<_> = (0..CONSUMERS)
        .map(|_| {
            tokio::spawn(consume(
                b.clone(),
                stop_consumers.clone(),
                failures.clone(),
                seen.clone(),
            ))
        })
        .collect();
    tokio::time::sleep(Duration::from_secs(1)).await;
    let parked: Vec<_> = (0..4)
        .map(|_| tokio::spawn(park(b.clone(), failures.clone())))
        .collect();
    tokio::time::sleep(Duration::from_millis(300)).await;

    // Act: the restart, then a second of load on a server that is back.
    let delivered_before = seen.distinct.load(Ordering::Relaxed);
    let server = tokio::task::spawn_blocking(move || {
        server.restart(DOWN);
        server
    })
    .await
    .unwrap();
    let back_at = Instant::now();
    tokio::time::sleep(Duration::from_secs(2)).await;
    stop_producers.store(true, Ordering::Relaxed);
    let mut stored = BTreeSet::new();
    for producer in producers {
        stored.extend(producer.await.expect("producer"));
    }
    for pop in parked {
        pop.await.expect("parked pop");
    }
    let all_delivered = crate::support::eventually(Duration::from_secs(60), || async {
        (seen.distinct.load(Ordering::Relaxed) >= stored.len() as u64).then_some(())
    })
    .await;
    stop_consumers.store(true, Ordering::Relaxed);
    for consumer in consumers {
        consumer.await.expect("consumer");
    }

    // Assert: the outage was met, and met with 503s naming the connection.
    let failures = failures.seen.lock().unwrap();
    let mut by_kind: BTreeMap<(&str, u16), usize> = BTreeMap::new();
    for (_, what, status, _) in failures.iter() {
        *by_kind.entry((what, status.as_u16())).or_default() += 1;
    }
    eprintln!(
        "stored {} messages ({} delivered before the restart); failures by kind: {by_kind:?}",
        stored.len(),
        delivered_before
    );
    assert!(!failures.is_empty(), "no request met the outage");
    for (_, what, status, body) in failures.iter() {
        assert_eq!(
            *status,
            StatusCode::SERVICE_UNAVAILABLE,
            "a {what} during the outage answered {status}: {body}"
        );
        let text = body["error"].as_str().unwrap_or_default();
        assert!(text.contains("connection"), "a {what} answered {body}");
    }
    let late: Vec<_> = failures
        .iter()
        .filter(|(sent, ..)| *sent > back_at)
        .map(|(_, what, status, body)| format!("{what}: {status} {body}"))
        .collect();
    assert!(
        late.is_empty(),
        "requests sent once the server was back failed: {late:?}"
    );

    // Assert: nothing lost, nothing unexpected, duplicates only where an ack failed.
    assert!(
        all_delivered.is_some(),
        "only {} of {} stored messages were delivered",
        seen.distinct.load(Ordering::Relaxed),
        stored.len()
    );
    let deliveries = seen.deliveries.lock().unwrap();
    let delivered: BTreeSet<u64> = deliveries.iter().copied().collect();
    assert_eq!(
        delivered, stored,
        "delivered numbers differ from stored ones"
    );
    let mut counts: BTreeMap<u64, usize> = BTreeMap::new();
    for n in deliveries.iter() {
        *counts.entry(*n).or_default() += 1;
    }
    let failed_acks = seen.failed_acks.lock().unwrap();
    let unexplained: Vec<u64> = counts
        .iter()
        .filter(|(n, count)| **count > 1 && !failed_acks.contains(n))
        .map(|(n, _)| *n)
        .collect();
    assert!(
        unexplained.is_empty(),
        "delivered twice without a failed ack: {unexplained:?}"
    );
    drop(server);
}
