//! The fault run's clients: producers that push numbered batches through one node each (a
//! failed push is re-sent unchanged to the same node, so each partition has one writer per
//! node and the order the README promises applies), and consumers on every node for queue
//! mode (leased, acked, some pops answered by a push+ack bundle) and two groups (`g1`
//! leased and acked, `g2` autoAck). Everything they send and get goes to the [`History`].

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::{json, Value};
use tokio::task::JoinHandle;

use super::history::{Answer, Delivery, Domain, History, Pushed};
use crate::support::read;

/// How long a producer re-sends one batch before it gives up (its messages then count as
/// never answered).
const GIVE_UP_AFTER: Duration = Duration::from_secs(30);
/// The pause before a failed request is sent again.
const RETRY_AFTER: Duration = Duration::from_millis(200);
/// Messages per pop.
pub const POP_BATCH: usize = 10;

/// What the clients do and where.
#[derive(Clone)]
pub struct Plan {
    /// Base URLs of the nodes.
    pub nodes: Vec<String>,
    /// The queue.
    pub queue: &'static str,
    /// Producers; producer `k` pushes through node `k % nodes` to partitions `p<k>-0` and
    /// `p<k>-1` (so `nodes` producers at least: bundles push to `p<node>-0`).
    pub producers: usize,
    /// Messages per push.
    pub batch: usize,
    /// A producer's pause between two pushes.
    pub push_gap: Duration,
    /// One queue-mode pop in this many is answered by a push+ack bundle instead of an ack.
    pub bundle_one_in: u64,
    /// Seeds the consumers' choices.
    pub seed: u64,
}

/// The running clients.
pub struct Workload {
    stop_producers: Arc<AtomicBool>,
    stop_consumers: Arc<AtomicBool>,
    producers: Vec<JoinHandle<()>>,
    consumers: Vec<JoinHandle<()>>,
}

impl Workload {
    /// Starts every producer and consumer.
    pub fn start(plan: &Plan, history: &Arc<History>) -> Self {
        let stop_producers = Arc::new(AtomicBool::new(false));
        let stop_consumers = Arc::new(AtomicBool::new(false));
        let producers = (0..plan.producers)
            .map(|k| {
                let (plan, history, stop) = (plan.clone(), history.clone(), stop_producers.clone());
                tokio::spawn(produce(plan, history, stop, k))
            })
            .collect();
        let mut consumers = Vec::new();
        for domain in Domain::ALL {
            for node in 0..plan.nodes.len() {
                let (plan, history) = (plan.clone(), history.clone());
                let stop = stop_consumers.clone();
                consumers.push(tokio::spawn(consume(plan, history, stop, domain, node)));
            }
        }
        Workload {
            stop_producers,
            stop_consumers,
            producers,
            consumers,
        }
    }

    /// Stops the producers and waits until each has an answer for its last batch (or gave
    /// up on it).
    pub async fn stop_producers(&mut self) {
        self.stop_producers.store(true, Ordering::Relaxed);
        for producer in self.producers.drain(..) {
            producer.await.expect("a producer panicked");
        }
    }

    /// Stops the consumers.
    pub async fn stop_consumers(&mut self) {
        self.stop_consumers.store(true, Ordering::Relaxed);
        for consumer in self.consumers.drain(..) {
            consumer.await.expect("a consumer panicked");
        }
    }
}

/// A client that gives a stopped node time (a pause lasts a lease and a bit) and drops idle
/// connections before the broker's keep-alive does.
fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(Duration::from_secs(15))
        .pool_idle_timeout(Duration::from_secs(2))
        .build()
        .expect("http client")
}

/// A request that failed: its status (0: no HTTP answer) and its error.
struct Failed(u16, String);

/// Sends a request; `Ok` with a 2xx answer, [`Failed`] otherwise.
async fn send(request: reqwest::RequestBuilder) -> Result<(StatusCode, Value), Failed> {
    match request.send().await {
        Ok(response) => {
            let (status, body) = read(response).await;
            if status.is_success() {
                return Ok((status, body));
            }
            let error = body["error"]
                .as_str()
                .map_or_else(|| body.to_string(), str::to_owned);
            Err(Failed(status.as_u16(), error))
        }
        Err(e) if e.is_timeout() => Err(Failed(0, "timeout".to_owned())),
        Err(_) => Err(Failed(0, "no connection".to_owned())),
    }
}

async fn produce(plan: Plan, history: Arc<History>, stop: Arc<AtomicBool>, k: usize) {
    let http = client();
    let node = k % plan.nodes.len();
    let url = format!("{}/api/v1/push", plan.nodes[node]);
    let mut seq = 0usize;
    let mut batch = 0usize;
    while !stop.load(Ordering::Relaxed) {
        let partition = format!("p{k}-{}", batch % 2);
        let ids: Vec<String> = (seq..seq + plan.batch)
            .map(|s| format!("m{k}-{s}"))
            .collect();
        let items: Vec<Value> = ids
            .iter()
            .map(|id| {
                json!({ "queue": plan.queue, "partition": partition,
                        "payload": { "id": id }, "transactionId": id })
            })
            .collect();
        let body = json!({ "items": items });
        let first_sent = Instant::now();
        let answers: Vec<Answer> = loop {
            match send(http.post(&url).json(&body)).await {
                Ok((_, answer)) => {
                    let at = Instant::now();
                    let list = answer.as_array().cloned().unwrap_or_default();
                    break (0..ids.len())
                        .map(|i| {
                            let status = list
                                .get(i)
                                .and_then(|a| a["status"].as_str())
                                .unwrap_or("missing");
                            match status {
                                "queued" | "duplicate" | "buffered" => {
                                    Answer::Stored(at, status.to_owned())
                                }
                                other => Answer::Refused(other.to_owned()),
                            }
                        })
                        .collect();
                }
                Err(Failed(status, error)) => {
                    history.fail("push", status, &error);
                    if (400..500).contains(&status) && status != 429 {
                        break vec![Answer::Refused(format!("HTTP {status}")); ids.len()];
                    }
                }
            }
            if first_sent.elapsed() > GIVE_UP_AFTER {
                break vec![Answer::Unknown("gave up".to_owned()); ids.len()];
            }
            tokio::time::sleep(RETRY_AFTER).await;
        };
        for (id, answer) in ids.into_iter().zip(answers) {
            history.push(Pushed {
                id,
                partition: partition.clone(),
                node,
                first_sent,
                answer,
                via: "push",
            });
        }
        seq += plan.batch;
        batch += 1;
        tokio::time::sleep(plan.push_gap).await;
    }
}

async fn consume(
    plan: Plan,
    history: Arc<History>,
    stop: Arc<AtomicBool>,
    domain: Domain,
    node: usize,
) {
    let http = client();
    let base = &plan.nodes[node];
    let pop = format!(
        "{base}/api/v1/pop/queue/{}?batch={POP_BATCH}&wait=true&timeout=1000{}",
        plan.queue,
        domain.query()
    );
    let mut rng = fastrand::Rng::with_seed(plan.seed ^ (node as u64 * 31 + domain as u64 + 1));
    let mut bundles = 0usize;
    while !stop.load(Ordering::Relaxed) {
        let pop_sent = Instant::now();
        let body = match send(http.get(&pop)).await {
            Ok((StatusCode::NO_CONTENT, _)) => continue,
            Ok((_, body)) => body,
            Err(Failed(status, error)) => {
                history.fail("pop", status, &error);
                if domain == Domain::AutoAck {
                    *history.auto_ack_pops_lost.lock().unwrap() += 1;
                }
                tokio::time::sleep(RETRY_AFTER).await;
                continue;
            }
        };
        let received = Instant::now();
        let messages = body["messages"].as_array().cloned().unwrap_or_default();
        let mut deliveries: Vec<Delivery> = messages
            .iter()
            .map(|m| Delivery {
                domain,
                id: m["data"]["id"].as_str().unwrap_or("?").to_owned(),
                partition: m["partition"].as_str().unwrap_or("?").to_owned(),
                offset: m["offset"].as_i64().unwrap_or(-1),
                lease: m["leaseId"].as_str().unwrap_or_default().to_owned(),
                node,
                pop_sent,
                received,
                acked: None,
            })
            .collect();
        if domain != Domain::AutoAck && !messages.is_empty() {
            let derived = messages.iter().any(|m| m["data"]["derived"] == true);
            let applied =
                if domain == Domain::Queue && !derived && rng.u64(0..plan.bundle_one_in) == 0 {
                    let id = format!("x{node}-{bundles}");
                    bundles += 1;
                    bundle(&plan, &http, &history, node, &messages, id).await
                } else {
                    ack(&http, &history, base, domain, &messages).await
                };
            for (delivery, applied) in deliveries.iter_mut().zip(applied) {
                delivery.acked = applied;
            }
        }
        history.deliver(deliveries);
    }
}

/// One ack operation (or `acknowledgments` item) for a popped message.
fn ack_of(message: &Value, typed: bool) -> Value {
    let mut ack = json!({
        "transactionId": message["transactionId"],
        "partitionId": message["partitionId"],
        "leaseId": message["leaseId"],
        "status": "completed",
    });
    if typed {
        ack["type"] = json!("ack");
    }
    ack
}

/// Acks popped messages; per message, when the ack was answered as applied.
async fn ack(
    http: &reqwest::Client,
    history: &History,
    base: &str,
    domain: Domain,
    messages: &[Value],
) -> Vec<Option<Instant>> {
    let acks: Vec<Value> = messages.iter().map(|m| ack_of(m, false)).collect();
    let body = json!({ "acknowledgments": acks, "consumerGroup": domain.group() });
    match send(http.post(format!("{base}/api/v1/ack/batch")).json(&body)).await {
        Ok((_, answers)) => {
            let at = Instant::now();
            let answers = answers.as_array().cloned().unwrap_or_default();
            (0..messages.len())
                .map(|i| {
                    let ok = answers.get(i).is_some_and(|a| a["success"] == true);
                    if !ok {
                        let error = answers.get(i).map_or("missing", |a| {
                            a["error"].as_str().unwrap_or("success: false")
                        });
                        history.fail("ack item", 200, error);
                    }
                    ok.then_some(at)
                })
                .collect()
        }
        Err(Failed(status, error)) => {
            history.fail("ack", status, &error);
            vec![None; messages.len()]
        }
    }
}

/// Answers popped messages with one bundle: push message `id` to the partition the
/// producer of this node writes, and ack every popped message, all or nothing. Records the
/// pushed message; per popped message, when its ack was answered as applied.
async fn bundle(
    plan: &Plan,
    http: &reqwest::Client,
    history: &History,
    node: usize,
    messages: &[Value],
    id: String,
) -> Vec<Option<Instant>> {
    let partition = format!("p{node}-0");
    let mut operations = vec![json!({ "type": "push", "items": [{
        "queue": plan.queue, "partition": partition,
        "payload": { "id": id, "derived": true }, "transactionId": id,
    }]})];
    operations.extend(messages.iter().map(|m| ack_of(m, true)));
    let mut leases: Vec<Value> = messages.iter().map(|m| m["leaseId"].clone()).collect();
    leases.dedup();
    let body = json!({ "operations": operations, "requiredLeases": leases });
    let first_sent = Instant::now();
    let url = format!("{}/api/v1/transaction", plan.nodes[node]);
    let (answer, applied) = match send(http.post(url).json(&body)).await {
        Ok((_, answer)) if answer["success"] == true => {
            let at = Instant::now();
            let status = answer["results"][0]["status"].as_str().unwrap_or("missing");
            let answer = match status {
                "queued" | "duplicate" => Answer::Stored(at, status.to_owned()),
                other => Answer::Refused(other.to_owned()),
            };
            (answer, Some(at))
        }
        Ok((_, answer)) => {
            let why = answer["error"]
                .as_str()
                .unwrap_or("success: false")
                .to_owned();
            history.fail("bundle", 200, &why);
            (Answer::Refused(why), None)
        }
        Err(Failed(status, error)) => {
            history.fail("bundle", status, &error);
            (Answer::Unknown(format!("HTTP {status}: {error}")), None)
        }
    };
    history.push(Pushed {
        id,
        partition,
        node,
        first_sent,
        answer,
        via: "bundle",
    });
    vec![applied; messages.len()]
}
