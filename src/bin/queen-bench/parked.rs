//! `queen-bench parked`: what parked long-poll pops cost a broker. It starts the broker,
//! measures push-then-pop latency on a queue of its own, parks pops over groups and queues
//! on connections of their own (or as streams of a few shared HTTP/2 connections, with
//! `--http2`), and reports RSS growth per parked pop, the broker's CPU
//! while they wait, the same push-then-pop latency again, how fast a push wakes one parked
//! pop (pops alone on queues of their own, one push at a time), how fast a push wakes the
//! many pops of a queue's groups, and last, for comparison, RSS growth per idle keep-alive connection.
//!
//! Map: [`args`] (command line), [`http`] (a bare keep-alive connection), [`consumer`]
//! (HTTP/1.1 or HTTP/2 under a parked pop), [`figures`] (the arithmetic and the table).

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use futures_util::{stream, StreamExt, TryStreamExt};
use tokio::sync::mpsc;
use tokio::task::JoinSet;

use crate::cpu;
use crate::stats::Latency;

mod args;
mod consumer;
mod figures;
mod http;

pub use args::ParkedArgs;
use consumer::{http2_client, Consumer};
use figures::{bytes_per_item, cpu_rate, groups_on_queue, placement, Figures};
use http::Conn;

/// Connections one loopback source address carries (below its ephemeral port range).
const PER_SOURCE_ADDRESS: usize = 20_000;
/// The queue of the push-then-pop probes.
const PROBE_QUEUE: &str = "parked-bench-probe";
/// Longest wait for every pop to be parked.
const PARK_TIMEOUT: Duration = Duration::from_secs(600);
/// The queue of single-wake pop `k`, alone on it.
fn single_queue(k: usize) -> String {
    format!("ps{k}")
}
/// Longest wait for the pop a single-wake push is for.
const SINGLE_WAKE_TIMEOUT: Duration = Duration::from_secs(5);
/// Pause between two single-wake pushes.
const SINGLE_WAKE_GAP: Duration = Duration::from_millis(20);
/// Pause between two wake pushes, and after the last.
const WAKE_GAP: Duration = Duration::from_millis(300);
/// Pause before the RSS reading with the idle connections open: well inside actix's 5 s
/// keep-alive, after which the broker closes a connection that sent nothing more.
const IDLE_SETTLE: Duration = Duration::from_millis(1500);

/// Runs the measurement, prints its table, and writes the JSON file when asked.
pub async fn main(args: ParkedArgs) -> anyhow::Result<()> {
    let figures = run(&args).await?;
    print!("{}", figures::render(&figures));
    if let Some(path) = &args.out {
        std::fs::write(path, serde_json::to_vec_pretty(&figures)?)?;
        eprintln!("figures written to {}", path.display());
    }
    Ok(())
}

async fn run(args: &ParkedArgs) -> anyhow::Result<Figures> {
    let idle_count = args.idle_connections();
    let (groups, queues) = (args.groups as usize, args.queues as usize);
    // The single-wake pops park beside the others, each alone on its queue.
    let parked_total = args.pops + args.single_wakes;
    let pop_connections = match args.http2 {
        true => args.http2_connections as usize,
        false => parked_total,
    };
    raise_fd_limit((pop_connections + idle_count) as u64 + 4096)?;
    let load_start = load_average();
    let http2: &[(String, String)] = &[("QUEEN_HTTP2".to_owned(), "true".to_owned())];
    let mut broker = args
        .launch
        .start(if args.http2 { http2 } else { &[] })
        .await?;
    let pid = broker.pid().context("the broker has no pid")?;
    let server: SocketAddr = broker
        .url
        .trim_start_matches("http://")
        .parse()
        .context("the broker's address")?;
    let sources = Arc::new(AtomicUsize::new(0));
    let epoch = Instant::now();

    // The probe connects afresh for each use: the broker closes a keep-alive connection
    // idle for 5 s.
    let other_queue_before =
        other_queue(&mut connect(server, &sources).await?, args.probes).await?;
    if !args.cold_single_queues {
        warm_single_queues(&mut connect(server, &sources).await?, args.single_wakes).await?;
    }
    tokio::time::sleep(args.settle).await;
    let rss_start_kib = rss_kib(pid)?;

    // Each pop is sent as soon as its connection is open (the broker answers 408 to a
    // connection that sends no request head within 30 s).
    let (woken_tx, mut woken_rx) = mpsc::unbounded_channel::<u64>();
    let (single_tx, mut single_rx) = mpsc::unbounded_channel::<u64>();
    let mut parked = JoinSet::new();
    let url = |i: usize| {
        let (queue, group) = match i < args.pops {
            true => {
                let (queue, group) = placement(i, groups, queues);
                (format!("pq{queue}"), format!("g{group}"))
            }
            false => (single_queue(i - args.pops), "solo".to_owned()),
        };
        format!(
            "/api/v1/pop/queue/{queue}?consumerGroup={group}&wait=true&autoAck=true&timeout={}",
            args.timeout_ms
        )
    };
    let reports = |i: usize| match i < args.pops {
        true => woken_tx.clone(),
        false => single_tx.clone(),
    };
    if args.http2 {
        let clients = http2_connections(server, pop_connections).await?;
        for i in 0..parked_total {
            let consumer = Consumer::Http2(clients[i % clients.len()].clone(), server);
            parked.spawn(keep_parked(consumer, url(i), epoch, reports(i)));
        }
    } else {
        let mut connecting = stream::iter(0..parked_total)
            .map(|i| {
                let sources = &sources;
                async move { connect(server, sources).await.map(|conn| (i, conn)) }
            })
            .buffer_unordered(args.connect_concurrency as usize);
        while let Some(opened) = connecting.next().await {
            let (i, conn) = opened?;
            parked.spawn(keep_parked(
                Consumer::Http1(conn),
                url(i),
                epoch,
                reports(i),
            ));
        }
    }
    drop((woken_tx, single_tx));
    wait_parked(server, &sources, &mut parked, parked_total).await?;
    tokio::time::sleep(args.settle).await;
    let rss_parked_kib = rss_kib(pid)?;

    let cpu_before = cpu::process_seconds(pid).unwrap_or(0.0);
    let watch = Instant::now();
    tokio::time::sleep(args.idle_window).await;
    let idle_cpu = cpu_rate(
        cpu_before,
        cpu::process_seconds(pid).unwrap_or(0.0),
        watch.elapsed().as_secs_f64(),
    );
    let mut probe = connect(server, &sources).await?;
    let parked_reported = parked_now(&mut probe).await?;
    check_alive(&mut parked)?;
    let other_queue_parked = other_queue(&mut probe, args.probes).await?;

    // One push at a time, each into the one pop parked on its queue.
    let mut single = Vec::with_capacity(args.single_wakes);
    let mut single_push = Vec::with_capacity(args.single_wakes);
    let mut paired = Vec::with_capacity(args.single_wakes);
    for k in 0..args.single_wakes {
        let sent_us = epoch.elapsed().as_micros() as u64;
        let queue = single_queue(k);
        let body = push_body(&queue, &format!(r#"{{"sent_us":{sent_us}}}"#));
        let answer = probe.post_json("/api/v1/push", &body).await?;
        single_push.push(epoch.elapsed().as_micros() as u64 - sent_us);
        anyhow::ensure!(
            answer.status < 300,
            "single-wake push answered {}",
            answer.status
        );
        if let Ok(Some(us)) = tokio::time::timeout(SINGLE_WAKE_TIMEOUT, single_rx.recv()).await {
            single.push(us);
            paired.push((us, single_push[k]));
        }
        tokio::time::sleep(SINGLE_WAKE_GAP).await;
    }
    check_alive(&mut parked)?;
    let mut single_after_push: Vec<u64> = paired
        .iter()
        .map(|(wake, push)| wake.saturating_sub(*push))
        .collect();
    print_slowest_single_wakes(&mut paired);

    let mut wakes_expected = 0;
    for w in 0..args.wakes {
        let queue = w % queues;
        wakes_expected += groups_on_queue(queue, groups, queues);
        let sent_us = epoch.elapsed().as_micros() as u64;
        let body = push_body(
            &format!("pq{queue}"),
            &format!(r#"{{"sent_us":{sent_us}}}"#),
        );
        let answer = probe.post_json("/api/v1/push", &body).await?;
        anyhow::ensure!(answer.status < 300, "wake push answered {}", answer.status);
        tokio::time::sleep(WAKE_GAP).await;
    }
    tokio::time::sleep(WAKE_GAP * 4).await;
    let mut woken = Vec::new();
    while let Ok(us) = woken_rx.try_recv() {
        woken.push(us);
    }
    check_alive(&mut parked)?;

    // The comparison last, with the pops still parked: memory the idle connections free
    // when the broker closes them (5 s keep-alive) is not reused by the pops' figures.
    let rss_before_idle_kib = rss_kib(pid)?;
    let idle = open(server, &sources, idle_count, args.connect_concurrency).await?;
    let idle: Vec<Conn> = stream::iter(idle)
        .map(|mut conn| async move {
            let answer = conn.get("/health").await?;
            anyhow::ensure!(answer.status == 200, "/health answered {}", answer.status);
            Ok(conn)
        })
        .buffer_unordered(args.connect_concurrency as usize)
        .try_collect()
        .await?;
    tokio::time::sleep(IDLE_SETTLE).await;
    let rss_idle_kib = rss_kib(pid)?;
    parked.abort_all();
    drop(idle);
    broker.stop();
    Ok(Figures {
        pops: args.pops,
        groups,
        queues,
        http2: args.http2,
        pop_connections,
        idle_connections: idle_count,
        rss_start_kib,
        rss_parked_kib,
        rss_before_idle_kib,
        rss_idle_kib,
        bytes_per_idle_connection: bytes_per_item(rss_before_idle_kib, rss_idle_kib, idle_count),
        bytes_per_parked_pop: bytes_per_item(rss_start_kib, rss_parked_kib, parked_total),
        idle_cpu,
        parked_reported,
        single_wakes: args.single_wakes,
        single_wakes_seen: single.len(),
        single_wake: Latency::from_micros(&mut single),
        single_push: Latency::from_micros(&mut single_push),
        single_after_push: Latency::from_micros(&mut single_after_push),
        wakes_seen: woken.len(),
        wake: Latency::from_micros(&mut woken),
        wakes_expected,
        other_queue_before,
        other_queue_parked,
        load: (load_start, load_average()),
    })
}

/// The body of a push of one message, `payload` (JSON text), to `queue`.
fn push_body(queue: &str, payload: &str) -> String {
    format!(r#"{{"items":[{{"queue":"{queue}","payload":{payload}}}]}}"#)
}

/// Gives each single-wake queue one message and lets its group pop it (autoAck), so the
/// pop that parks there later is a consumer's next pop, not its first claim.
async fn warm_single_queues(conn: &mut Conn, count: usize) -> anyhow::Result<()> {
    for k in 0..count {
        let queue = single_queue(k);
        let body = push_body(&queue, r#"{"warm":true}"#);
        let pushed = conn.post_json("/api/v1/push", &body).await?;
        anyhow::ensure!(
            pushed.status < 300,
            "warm-up push answered {}",
            pushed.status
        );
        let popped = conn
            .get(&format!(
                "/api/v1/pop/queue/{queue}?consumerGroup=solo&autoAck=true"
            ))
            .await?;
        anyhow::ensure!(
            popped.status == 200,
            "warm-up pop of {queue} answered {}",
            popped.status
        );
    }
    Ok(())
}

/// Prints the slowest single wakes beside their own push's answer, to tell a tail the
/// push caused (its commit was slow too) from one on the wake's side.
fn print_slowest_single_wakes(paired: &mut [(u64, u64)]) {
    paired.sort_unstable_by(|a, b| b.cmp(a));
    let slowest: Vec<String> = paired
        .iter()
        .take(5)
        .map(|(wake, push)| {
            format!(
                "{:.1} ms (push {:.1} ms)",
                *wake as f64 / 1e3,
                *push as f64 / 1e3
            )
        })
        .collect();
    eprintln!("slowest single wakes: {}", slowest.join(", "));
}

/// One consumer: pops with a long wait, again and again; each delivered message reports
/// how long after its push it arrived (µs).
async fn keep_parked(
    mut conn: Consumer,
    url: String,
    epoch: Instant,
    woken: mpsc::UnboundedSender<u64>,
) -> anyhow::Result<()> {
    loop {
        let answer = conn.get(&url).await?;
        let now = epoch.elapsed().as_micros() as u64;
        match answer.status {
            204 => {}
            200 => {
                for sent in sent_stamps(&answer.body)? {
                    let _ = woken.send(now.saturating_sub(sent));
                }
            }
            other => bail!(
                "a parked pop answered {other}: {}",
                String::from_utf8_lossy(&answer.body)
            ),
        }
    }
}

/// `count` HTTP/2 clients, each with its connection open (one `GET /health` made it).
async fn http2_connections(
    server: SocketAddr,
    count: usize,
) -> anyhow::Result<Vec<reqwest::Client>> {
    let mut clients = Vec::with_capacity(count);
    for _ in 0..count {
        let client = http2_client()?;
        let answer = Consumer::Http2(client.clone(), server)
            .get("/health")
            .await?;
        anyhow::ensure!(answer.status == 200, "/health answered {}", answer.status);
        clients.push(client);
    }
    Ok(clients)
}

/// The `sent_us` stamps of a pop answer's messages.
fn sent_stamps(body: &[u8]) -> anyhow::Result<Vec<u64>> {
    let answer: serde_json::Value = serde_json::from_slice(body).context("pop answer")?;
    Ok(answer["messages"]
        .as_array()
        .map(|messages| {
            messages
                .iter()
                .filter_map(|m| m["data"]["sent_us"].as_u64())
                .collect()
        })
        .unwrap_or_default())
}

/// A connection from the next loopback source address with ports to spare.
async fn connect(server: SocketAddr, sources: &AtomicUsize) -> anyhow::Result<Conn> {
    let n = sources.fetch_add(1, Ordering::Relaxed);
    let host = 1 + (n / PER_SOURCE_ADDRESS) as u32;
    let local = IpAddr::V4(Ipv4Addr::from(
        u32::from(Ipv4Addr::new(127, 0, 0, 0)) + host,
    ));
    Conn::connect(server, local).await
}

/// `count` connections, `concurrency` being opened at a time.
async fn open(
    server: SocketAddr,
    sources: &AtomicUsize,
    count: usize,
    concurrency: u64,
) -> anyhow::Result<Vec<Conn>> {
    stream::iter(0..count)
        .map(|_| connect(server, sources))
        .buffer_unordered(concurrency as usize)
        .try_collect()
        .await
}

/// Push one message to the probe queue, then pop it (no wait); the latency of the pair.
async fn other_queue(conn: &mut Conn, rounds: usize) -> anyhow::Result<Option<Latency>> {
    let push = push_body(PROBE_QUEUE, r#"{"probe":true}"#);
    let pop = format!("/api/v1/pop/queue/{PROBE_QUEUE}?autoAck=true");
    let mut samples = Vec::with_capacity(rounds);
    for _ in 0..rounds {
        let start = Instant::now();
        let pushed = conn.post_json("/api/v1/push", &push).await?;
        anyhow::ensure!(pushed.status < 300, "probe push answered {}", pushed.status);
        let mut tries = 0;
        while conn.get(&pop).await?.status != 200 {
            tries += 1;
            anyhow::ensure!(tries < 1000, "the probe's message never came back");
        }
        samples.push(start.elapsed().as_micros() as u64);
    }
    Ok(Latency::from_micros(&mut samples))
}

/// Waits until the broker reports `pops` parked (a pop that failed ends the wait).
async fn wait_parked(
    server: SocketAddr,
    sources: &AtomicUsize,
    parked: &mut JoinSet<anyhow::Result<()>>,
    pops: usize,
) -> anyhow::Result<()> {
    let deadline = Instant::now() + PARK_TIMEOUT;
    let mut probe = connect(server, sources).await?;
    loop {
        check_alive(parked)?;
        let now = parked_now(&mut probe).await?;
        if now >= pops as i64 {
            return Ok(());
        }
        if Instant::now() > deadline {
            bail!("only {now} of {pops} pops parked after {PARK_TIMEOUT:?}");
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// Fails when a parked pop's task ended (its error says why).
fn check_alive(parked: &mut JoinSet<anyhow::Result<()>>) -> anyhow::Result<()> {
    match parked.try_join_next() {
        None => Ok(()),
        Some(Ok(Ok(()))) => bail!("a parked pop ended"),
        Some(Ok(Err(e))) => Err(e.context("a parked pop failed")),
        Some(Err(e)) => Err(anyhow::Error::from(e).context("a parked pop panicked")),
    }
}

/// The broker's `queen_pops_parked`.
async fn parked_now(probe: &mut Conn) -> anyhow::Result<i64> {
    let answer = probe.get("/metrics/prometheus").await?;
    let text = String::from_utf8_lossy(&answer.body);
    text.lines()
        .find_map(|l| l.strip_prefix("queen_pops_parked "))
        .and_then(|v| v.trim().parse::<f64>().ok())
        .map(|v| v as i64)
        .context("no queen_pops_parked in /metrics/prometheus")
}

/// Resident memory of a process, KiB.
fn rss_kib(pid: i32) -> anyhow::Result<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .context("no VmRSS in /proc/<pid>/status")
}

/// The 1-minute load average.
fn load_average() -> f64 {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(f64::NAN)
}

/// Raises this process's open-file limit to `want` (the broker it starts inherits it):
/// the hard limit too when allowed (root with `CAP_SYS_RESOURCE`), else up to the hard
/// limit, which must then cover `want`.
fn raise_fd_limit(want: u64) -> anyhow::Result<()> {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes into the struct we own.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0 {
        bail!("getrlimit: {}", std::io::Error::last_os_error());
    }
    let want = want as libc::rlim_t;
    if limit.rlim_cur >= want {
        return Ok(());
    }
    let raised = libc::rlimit {
        rlim_cur: want,
        rlim_max: limit.rlim_max.max(want),
    };
    // SAFETY: setrlimit reads the struct we own.
    if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raised) } == 0 {
        return Ok(());
    }
    let hard = libc::rlimit {
        rlim_cur: limit.rlim_max,
        rlim_max: limit.rlim_max,
    };
    // SAFETY: as above.
    if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &hard) } != 0 || limit.rlim_max < want {
        bail!(
            "{want} open files are needed and the hard limit is {} (raising it needs \
             CAP_SYS_RESOURCE): park fewer pops or open fewer idle connections",
            limit.rlim_max
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stamps_come_from_each_message_s_data() {
        let body = br#"{"messages":[{"data":{"sent_us":12}},{"data":{"other":1}},{"data":{"sent_us":40}}]}"#;
        assert_eq!(sent_stamps(body).unwrap(), vec![12, 40]);
        assert!(sent_stamps(b"{}").unwrap().is_empty());
        assert!(sent_stamps(b"not json").is_err());
    }

    #[test]
    fn a_push_body_carries_one_message_to_its_queue() {
        let body: serde_json::Value =
            serde_json::from_str(&push_body("ps7", r#"{"sent_us":5}"#)).unwrap();
        assert_eq!(
            body,
            serde_json::json!({"items": [{"queue": "ps7", "payload": {"sent_us": 5}}]})
        );
    }
}
