//! Load for fault tests: producers and leased consumers that behave like the published
//! clients (a failed push is re-sent unchanged, to the next node when there are several; a
//! failed ack is retried, then left to its lease), optionally impatient (they drop pushes
//! and acks after 0.2-10 ms and re-send), and that record every answer that was
//! not a success and every delivery, so a test can prove that nothing stored was lost and
//! that every duplicate is one the lease model explains (a failed ack).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::{json, Value};
use tokio::task::JoinHandle;

use super::{eventually, read};

/// A transport failure (no HTTP answer), recorded with this status.
pub const NO_ANSWER: StatusCode = StatusCode::IM_A_TEAPOT;

/// One request that did not succeed.
pub struct Failure {
    /// When it was sent.
    pub sent: Instant,
    /// "push", "pop", "ack", ...
    pub what: &'static str,
    /// Its status ([`NO_ANSWER`] when the connection failed).
    pub status: StatusCode,
    /// Its body (or the transport error's text).
    pub body: Value,
}

/// Every answer that was not a success.
#[derive(Default)]
pub struct Failures {
    seen: Mutex<Vec<Failure>>,
}

impl Failures {
    fn note(&self, sent: Instant, what: &'static str, status: StatusCode, body: Value) {
        self.seen.lock().unwrap().push(Failure {
            sent,
            what,
            status,
            body,
        });
    }

    /// Runs `check` over the failures recorded so far.
    pub fn with<T>(&self, check: impl FnOnce(&[Failure]) -> T) -> T {
        check(&self.seen.lock().unwrap())
    }

    /// Counts by (what, status), for the test's log.
    pub fn summary(&self) -> BTreeMap<(&'static str, u16), usize> {
        let mut by_kind = BTreeMap::new();
        for f in self.seen.lock().unwrap().iter() {
            *by_kind.entry((f.what, f.status.as_u16())).or_default() += 1;
        }
        by_kind
    }
}

/// Sends one request; a 2xx answer is returned, anything else is noted and `None`.
pub async fn send(
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
        Err(error) => failures.note(sent, what, NO_ANSWER, json!(format!("{error:?}"))),
    }
    None
}

/// Where the load goes and how it is shaped.
#[derive(Clone)]
pub struct Load {
    /// Base URLs (`http://host:port`) of the nodes; producers move to the next on a failure.
    pub nodes: Vec<String>,
    /// The queue.
    pub queue: &'static str,
    /// Partitions `p0`..; a producer's batches go round them.
    pub partitions: u64,
    /// Messages per push.
    pub batch: u64,
    /// Shared by every task.
    pub failures: Arc<Failures>,
    /// Set to stop the producers.
    pub stop_producers: Arc<AtomicBool>,
    /// Set to stop the consumers.
    pub stop_consumers: Arc<AtomicBool>,
    /// Clients that give up on pushes and acks after a few milliseconds (then re-send,
    /// each time waiting twice as long): requests dropped mid-way at random moments.
    pub impatient: bool,
    /// Messages answered `buffered` (written to a node's push spool): stored numbers too,
    /// which must be delivered like the others.
    pub buffered: Arc<AtomicU64>,
}

impl Load {
    /// Load on `nodes` for `queue`.
    pub fn new(nodes: Vec<String>, queue: &'static str, partitions: u64, batch: u64) -> Self {
        Load {
            nodes,
            queue,
            partitions,
            batch,
            failures: Arc::default(),
            stop_producers: Arc::default(),
            stop_consumers: Arc::default(),
            impatient: false,
            buffered: Arc::default(),
        }
    }

    /// Starts `producers` producers and `consumers` consumers.
    pub fn start(&self, producers: u64, consumers: usize) -> Running {
        let seen = Arc::new(Seen::default());
        Running {
            producers: (0..producers)
                .map(|p| tokio::spawn(produce(self.clone(), p)))
                .collect(),
            consumers: (0..consumers)
                .map(|c| tokio::spawn(consume(self.clone(), c, seen.clone())))
                .collect(),
            load: self.clone(),
            seen,
        }
    }

    /// The same load with impatient clients.
    pub fn impatient(mut self) -> Self {
        self.impatient = true;
        self
    }

    /// Gives `request` the timeout of try `attempt` (0-based) when the clients are
    /// impatient: 0.2-10 ms at first (a release broker answers an ack in about 1 ms, so
    /// some are dropped in every build), doubling with each try.
    fn patience(
        &self,
        request: reqwest::RequestBuilder,
        attempt: u32,
        dice: &mut Dice,
    ) -> reqwest::RequestBuilder {
        if !self.impatient {
            return request;
        }
        let micros = (200 + dice.below(9_800)) << attempt.min(10);
        request.timeout(Duration::from_micros(micros))
    }
}

/// A small deterministic random source (an LCG), so impatient clients give up at varied
/// moments without a dependency.
struct Dice(u64);

impl Dice {
    fn new(seed: u64) -> Self {
        Dice(
            seed.wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407),
        )
    }

    fn below(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) % n
    }
}

/// A client whose idle connections go before the broker's keep-alive closes them.
pub fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .pool_idle_timeout(Duration::from_secs(2))
        .build()
        .expect("http client")
}

/// Pushes batches of numbered messages (payload `{"n": n}`, transaction id `t<n>`) until
/// told to stop, starting on node `producer % nodes`; a failed batch is re-sent unchanged
/// (to the next node) until answered. Returns the numbers answered as stored: `queued`,
/// `duplicate` of an earlier try whose commit did happen, or `buffered` (spooled, stored
/// later by the node's replay).
async fn produce(load: Load, producer: u64) -> Vec<u64> {
    let http = client();
    let mut dice = Dice::new(producer);
    let mut node = producer as usize;
    let mut stored = Vec::new();
    let mut batch = 0u64;
    while !load.stop_producers.load(Ordering::Relaxed) {
        let first = producer * 1_000_000 + batch * load.batch;
        let items: Vec<Value> = (first..first + load.batch)
            .map(|n| {
                json!({
                    "queue": load.queue,
                    "partition": format!("p{}", batch % load.partitions),
                    "payload": { "n": n },
                    "transactionId": format!("t{n}"),
                })
            })
            .collect();
        let body = json!({ "items": items });
        let deadline = Instant::now() + Duration::from_secs(60);
        let mut attempt = 0;
        let answers = loop {
            let url = format!("{}/api/v1/push", load.nodes[node % load.nodes.len()]);
            let request = load.patience(http.post(url).json(&body), attempt, &mut dice);
            if let Some((_, answer)) = send(&load.failures, "push", request).await {
                break answer;
            }
            assert!(Instant::now() < deadline, "a push never succeeded");
            node += 1;
            attempt += 1;
            if !load.impatient {
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        };
        let answers = answers.as_array().expect("push answers an array").clone();
        assert_eq!(answers.len() as u64, load.batch);
        for (k, answer) in answers.iter().enumerate() {
            let status = answer["status"].as_str().unwrap_or_default();
            assert!(
                matches!(status, "queued" | "duplicate" | "buffered"),
                "push item answered {answer}"
            );
            if status == "buffered" {
                load.buffered.fetch_add(1, Ordering::Relaxed);
            }
            stored.push(first + k as u64);
        }
        batch += 1;
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    stored
}

/// What the consumers saw: every delivery, and the numbers whose ack failed.
#[derive(Default)]
pub struct Seen {
    deliveries: Mutex<Vec<u64>>,
    /// Where each delivery came from: (number, partition id, offset, lease id).
    places: Mutex<Vec<(u64, String, i64, String)>>,
    failed_acks: Mutex<BTreeSet<u64>>,
    distinct: Mutex<BTreeSet<u64>>,
    distinct_count: AtomicU64,
}

impl Seen {
    /// Distinct numbers delivered so far.
    pub fn distinct(&self) -> u64 {
        self.distinct_count.load(Ordering::Relaxed)
    }

    /// Asserts the deliveries are exactly `stored`, each once, except numbers whose ack
    /// failed (their lease expired, so they came again).
    pub fn assert_exactly_stored(&self, stored: &BTreeSet<u64>) {
        let deliveries = self.deliveries.lock().unwrap();
        let delivered: BTreeSet<u64> = deliveries.iter().copied().collect();
        let lost: Vec<_> = stored.difference(&delivered).take(20).collect();
        let unknown: Vec<_> = delivered.difference(stored).take(20).collect();
        assert!(lost.is_empty(), "stored but never delivered: {lost:?}...");
        assert!(
            unknown.is_empty(),
            "delivered but never stored: {unknown:?}..."
        );
        let mut counts: BTreeMap<u64, usize> = BTreeMap::new();
        for n in deliveries.iter() {
            *counts.entry(*n).or_default() += 1;
        }
        let failed_acks = self.failed_acks.lock().unwrap();
        let unexplained: Vec<u64> = counts
            .iter()
            .filter(|(n, count)| **count > 1 && !failed_acks.contains(n))
            .map(|(n, _)| *n)
            .collect();
        let places: Vec<_> = self
            .places
            .lock()
            .unwrap()
            .iter()
            .filter(|p| unexplained.contains(&p.0))
            .cloned()
            .collect();
        assert!(
            unexplained.is_empty(),
            "delivered twice without a failed ack: {unexplained:?}; deliveries (number, \
             partition, offset, lease): {places:?}"
        );
        eprintln!(
            "{} deliveries of {} stored messages; {} acks failed",
            deliveries.len(),
            stored.len(),
            failed_acks.len()
        );
    }
}

/// Pops leased batches from node `consumer % nodes` and acks each there until told to
/// stop; a failed ack is retried once, then left to its lease (the message comes again).
async fn consume(load: Load, consumer: usize, seen: Arc<Seen>) {
    let http = client();
    let mut dice = Dice::new(1000 + consumer as u64);
    let base = &load.nodes[consumer % load.nodes.len()];
    let pop = format!(
        "{base}/api/v1/pop/queue/{}?batch=20&wait=true&timeout=1000",
        load.queue
    );
    while !load.stop_consumers.load(Ordering::Relaxed) {
        let Some((status, body)) = send(&load.failures, "pop", http.get(&pop)).await else {
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
        seen.places
            .lock()
            .unwrap()
            .extend(messages.iter().zip(&numbers).map(|(m, n)| {
                (
                    *n,
                    m["partitionId"].as_str().unwrap_or_default().to_owned(),
                    m["offset"].as_i64().unwrap_or(-1),
                    m["leaseId"].as_str().unwrap_or_default().to_owned(),
                )
            }));
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
        for attempt in 0..2 {
            let request = http.post(format!("{base}/api/v1/ack/batch")).json(&body);
            let request = load.patience(request, attempt, &mut dice);
            if let Some((_, answers)) = send(&load.failures, "ack", request).await {
                let answers = answers.as_array().expect("ack answers").clone();
                acked = answers.iter().all(|a| a["success"] == true);
                break;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        if !acked {
            seen.failed_acks.lock().unwrap().extend(&numbers);
        }
        let mut distinct = seen.distinct.lock().unwrap();
        for n in numbers {
            if distinct.insert(n) {
                seen.distinct_count.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}

/// Producers and consumers running on a [`Load`].
pub struct Running {
    load: Load,
    seen: Arc<Seen>,
    producers: Vec<JoinHandle<Vec<u64>>>,
    consumers: Vec<JoinHandle<()>>,
}

impl Running {
    /// What the consumers saw so far.
    pub fn seen(&self) -> &Seen {
        &self.seen
    }

    /// Stops the producers, lets the consumers drain (a minute at most) until every stored
    /// number was delivered, stops them, and asserts the deliveries are exactly the stored
    /// numbers with duplicates only after failed acks. Returns the stored numbers.
    pub async fn finish(self) -> BTreeSet<u64> {
        self.load.stop_producers.store(true, Ordering::Relaxed);
        let mut stored = BTreeSet::new();
        for producer in self.producers {
            stored.extend(producer.await.expect("producer"));
        }
        let seen = &self.seen;
        let all_delivered = eventually(Duration::from_secs(60), || async {
            (seen.distinct() >= stored.len() as u64).then_some(())
        })
        .await;
        self.load.stop_consumers.store(true, Ordering::Relaxed);
        for consumer in self.consumers {
            consumer.await.expect("consumer");
        }
        assert!(
            all_delivered.is_some(),
            "only {} of {} stored messages were delivered; failures: {:?}",
            seen.distinct(),
            stored.len(),
            self.load.failures.summary()
        );
        seen.assert_exactly_stored(&stored);
        stored
    }
}
