//! `cluster/queen-cluster.sh` driven end to end: its own PostgreSQL, three real broker
//! processes and nginx in front, traffic through the balancer, then a clean stop.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::{json, Value};
use tempfile::TempDir;

/// Three nodes: enough for round-robin to spread requests over more than two.
const NODES: u16 = 3;
const MESSAGES: u64 = 100;
/// Several partitions, so successive pops claim different ones.
const PARTITIONS: u64 = 4;
/// Small batches, so draining takes many pops and the balancer spreads them over the nodes.
const BATCH: u64 = 10;
/// Ports are picked below the kernel's ephemeral range (32768 and up), where outgoing
/// connections of parallel tests never take them.
const PORT_RANGE: std::ops::Range<u16> = 20_000..32_000;

/// `start 3` serves every pushed message exactly once through the balancer, from several
/// nodes, and `stop` leaves no broker process and no listening port behind.
#[tokio::test]
async fn the_cluster_script_serves_each_message_once_through_the_balancer_and_stops_clean() {
    // Three brokers, PostgreSQL and nginx load the machine: keep the timing tests away.
    let _quiet = crate::support::fixtures::TIMING.lock().await;
    // Arrange
    let mut cluster = Cluster::new();
    cluster.run(&["start", &NODES.to_string()]).await;
    let lb = format!("http://127.0.0.1:{}", cluster.lb_port);
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(60))
        .build()
        .expect("http client");

    // Act: push through the balancer in ten requests, then drain it through the balancer.
    for chunk in (0..MESSAGES).collect::<Vec<_>>().chunks(10) {
        let items: Vec<Value> = chunk
            .iter()
            .map(|seq| {
                json!({"queue": "cluster-script", "partition": format!("p{}", seq % PARTITIONS),
                       "payload": {"seq": seq}})
            })
            .collect();
        let answer = http
            .post(format!("{lb}/api/v1/push"))
            .json(&json!({ "items": items }))
            .send()
            .await
            .expect("push reaches the balancer");
        assert!(answer.status().is_success(), "push: {}", answer.status());
        let answers: Vec<Value> = answer.json().await.expect("push answers JSON");
        assert!(
            answers.iter().all(|a| a["status"] == "queued"),
            "{answers:?}"
        );
    }
    let mut seen: BTreeMap<u64, usize> = BTreeMap::new();
    let mut served_by: BTreeSet<String> = BTreeSet::new();
    let deadline = Instant::now() + Duration::from_secs(60);
    while seen.values().sum::<usize>() < MESSAGES as usize && Instant::now() < deadline {
        let pop =
            format!("{lb}/api/v1/pop/queue/cluster-script?batch={BATCH}&wait=true&timeout=2000");
        let answer = http
            .get(pop)
            .send()
            .await
            .expect("pop reaches the balancer");
        if answer.status() == StatusCode::NO_CONTENT {
            continue;
        }
        assert_eq!(answer.status(), StatusCode::OK, "pop");
        if let Some(node) = answer.headers().get("x-queen-upstream") {
            served_by.insert(node.to_str().unwrap_or_default().to_owned());
        }
        let body: Value = answer.json().await.expect("pop answers JSON");
        let messages = body["messages"].as_array().expect("messages array").clone();
        for m in &messages {
            *seen
                .entry(m["data"]["seq"].as_u64().expect("seq payload"))
                .or_default() += 1;
        }
        ack_through(&http, &lb, &messages).await;
    }
    let leftover = http
        .get(format!(
            "{lb}/api/v1/pop/queue/cluster-script?batch={BATCH}"
        ))
        .send()
        .await
        .expect("pop reaches the balancer")
        .status();
    let mut direct = Vec::new();
    for port in cluster.http_ports() {
        let url = format!("http://127.0.0.1:{port}/health");
        let status = http.get(url).send().await.map(|r| r.status().as_u16());
        direct.push((port, status.unwrap_or(0)));
    }
    let brokers = cluster.broker_pids();
    cluster.run(&["stop"]).await;

    // Assert
    let expected: BTreeMap<u64, usize> = (0..MESSAGES).map(|seq| (seq, 1)).collect();
    assert_eq!(seen, expected, "every message comes back exactly once");
    assert_eq!(
        leftover,
        StatusCode::NO_CONTENT,
        "nothing is delivered twice"
    );
    assert!(served_by.len() >= 2, "pops were served by {served_by:?}");
    assert!(
        direct.iter().all(|(_, s)| *s == 200),
        "direct /health: {direct:?}"
    );
    assert_eq!(brokers.len(), NODES as usize, "one pid file per node");
    let listening: Vec<u16> = cluster.all_ports().filter(|p| listening(*p)).collect();
    assert!(
        listening.is_empty(),
        "still listening after stop: {listening:?}"
    );
    let alive: Vec<u32> = brokers.into_iter().filter(|pid| alive(*pid)).collect();
    assert!(
        alive.is_empty(),
        "brokers still running after stop: {alive:?}"
    );
    let left = processes_marked_with(cluster.dir.path());
    assert!(
        left.is_empty(),
        "cluster processes left after stop: {left:?}"
    );
}

/// Acks a popped batch through the balancer (often on another node than the pop's).
async fn ack_through(http: &reqwest::Client, lb: &str, messages: &[Value]) {
    let acks: Vec<Value> = messages
        .iter()
        .map(|m| {
            json!({"transactionId": m["transactionId"], "partitionId": m["partitionId"],
                   "leaseId": m["leaseId"], "status": "completed"})
        })
        .collect();
    let answer = http
        .post(format!("{lb}/api/v1/ack/batch"))
        .json(&json!({ "acknowledgments": acks }))
        .send()
        .await
        .expect("ack reaches the balancer");
    assert_eq!(answer.status(), StatusCode::OK, "ack");
    let answers: Vec<Value> = answer.json().await.expect("ack answers JSON");
    assert!(answers.iter().all(|a| a["success"] == true), "{answers:?}");
}

/// A cluster run by the script in a temporary state folder on free ports; stopped on drop
/// (also when an assertion failed), printing the logs when the test is failing.
struct Cluster {
    dir: TempDir,
    http_base: u16,
    mesh_base: u16,
    lb_port: u16,
    stopped: bool,
}

impl Cluster {
    fn new() -> Self {
        let dir = tempfile::Builder::new()
            .prefix("queen-cluster-")
            .tempdir()
            .expect("make the state folder");
        // As root, PostgreSQL and the nginx workers run as other users that must reach it.
        fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o755))
            .expect("open the state folder");
        let base = free_port_block(2 * NODES + 1);
        Cluster {
            dir,
            http_base: base,
            mesh_base: base + NODES,
            lb_port: base + 2 * NODES,
            stopped: false,
        }
    }

    /// Runs the script with a subcommand and asserts it succeeded.
    async fn run(&mut self, args: &[&str]) {
        self.stopped |= args == ["stop"];
        let output = tokio::process::Command::from(self.command(args))
            .output()
            .await
            .expect("run the cluster script");
        assert_success(args, &output);
    }

    fn command(&self, args: &[&str]) -> Command {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("cluster/queen-cluster.sh");
        let mut command = Command::new("bash");
        command
            .arg(script)
            .args(args)
            .env("QUEEN_BIN", env!("CARGO_BIN_EXE_queen"))
            .env("QUEEN_CLUSTER_DIR", self.dir.path())
            .env("QUEEN_CLUSTER_HTTP_BASE_PORT", self.http_base.to_string())
            .env("QUEEN_CLUSTER_MESH_BASE_PORT", self.mesh_base.to_string())
            .env("QUEEN_CLUSTER_LB_PORT", self.lb_port.to_string())
            .env("QUEEN_LB", "nginx")
            .env_remove("DATABASE_URL")
            .env_remove("PG_HOST");
        command
    }

    fn http_ports(&self) -> impl Iterator<Item = u16> {
        self.http_base..self.http_base + NODES
    }

    fn all_ports(&self) -> impl Iterator<Item = u16> {
        self.http_base..=self.lb_port
    }

    /// The pids the script recorded for the brokers.
    fn broker_pids(&self) -> Vec<u32> {
        (1..=NODES)
            .filter_map(|i| {
                fs::read_to_string(self.dir.path().join(format!("nodes/node{i}.pid"))).ok()
            })
            .filter_map(|pid| pid.trim().parse().ok())
            .collect()
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        if std::thread::panicking() {
            if let Ok(logs) = self.command(&["logs"]).output() {
                eprintln!(
                    "---- cluster logs ----\n{}",
                    String::from_utf8_lossy(&logs.stdout)
                );
            }
        }
        if !self.stopped {
            if let Ok(output) = self.command(&["stop"]).output() {
                eprintln!("{}", String::from_utf8_lossy(&output.stderr));
            }
        }
    }
}

fn assert_success(args: &[&str], output: &Output) {
    assert!(
        output.status.success(),
        "queen-cluster.sh {args:?} failed ({}):\n{}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

/// The first port of `len` consecutive loopback ports that can all be bound right now.
fn free_port_block(len: u16) -> u16 {
    let span = PORT_RANGE.end - PORT_RANGE.start - len;
    let offset = (std::process::id() as u16).wrapping_mul(97) % span;
    (0..span)
        .map(|step| PORT_RANGE.start + (offset + step * len) % span)
        .find(|base| {
            let held: Vec<_> = (*base..*base + len)
                .map_while(|p| TcpListener::bind(("127.0.0.1", p)).ok())
                .collect();
            held.len() == len as usize
        })
        .expect("a block of free loopback ports")
}

fn listening(port: u16) -> bool {
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    TcpStream::connect_timeout(&addr, Duration::from_millis(500)).is_ok()
}

/// True when the process exists and is not a zombie awaiting its parent.
fn alive(pid: u32) -> bool {
    fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|stat| {
            stat.rsplit_once(") ")
                .map(|(_, rest)| !rest.starts_with('Z'))
        })
        .unwrap_or(false)
}

/// Live processes whose environment carries this cluster's state folder (the script hands
/// `QUEEN_CLUSTER_DIR` to everything it starts).
fn processes_marked_with(dir: &Path) -> Vec<(u32, PathBuf)> {
    let marker = format!("QUEEN_CLUSTER_DIR={}", dir.display());
    let Ok(entries) = fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| *pid != std::process::id() && alive(*pid))
        .filter(|pid| {
            fs::read(format!("/proc/{pid}/environ"))
                .map(|env| env.split(|b| *b == 0).any(|var| var == marker.as_bytes()))
                .unwrap_or(false)
        })
        .map(|pid| {
            (
                pid,
                fs::read_link(format!("/proc/{pid}/exe")).unwrap_or_default(),
            )
        })
        .collect()
}
