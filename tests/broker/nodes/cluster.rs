//! A cluster of real `queen` processes over one database of the shared test PostgreSQL.
//!
//! Owns the processes: free ports picked before any node starts (so a restarted node comes
//! back where its peers expect it), one log file per node, hard kills, restarts, and the
//! teardown that stops every node and fails the test if a node panicked or died on its own.
//! What the nodes are asked to do (push, pop, ack, metrics) lives in [`super::node`].

use std::fs::OpenOptions;
use std::io::Write;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use tokio_postgres::config::Host;

use super::node::Node;
use crate::support::process::{signal, wait_until};
use crate::support::{eventually, postgres};

/// How long a node may take to answer `/health` after it was spawned: a debug build applies
/// the schema on a fresh database, possibly while other tests load both cores.
const START_WITHIN: Duration = Duration::from_secs(60);
/// How long a node may take to exit after SIGTERM before it is killed: the broker's own HTTP
/// drain is 5 s, so anything longer is a hang.
const STOP_WITHIN: Duration = Duration::from_secs(8);
/// Lines of each node's log printed when a test fails.
const LOG_TAIL_LINES: usize = 40;
/// Cluster starts tried when a node finds a chosen port taken.
const START_ATTEMPTS: usize = 3;

/// How the nodes of a cluster are set up.
#[derive(Clone, Debug)]
pub struct Options {
    /// Give every node the full peer list (`QUEEN_PEERS`); without it a node has no peers.
    pub mesh: bool,
    /// `QUEEN_MESH_SECRET`, when set.
    pub secret: Option<String>,
    /// Extra settings for every node (they win over the harness's defaults).
    pub env: Vec<(String, String)>,
    /// Extra settings for one node (index, name, value); they win over `env`.
    pub node_env: Vec<(usize, String, String)>,
    /// A cgroup v2 folder per node index: the node's process joins it before it runs (on
    /// every restart too), so firewall rules can match one node's sockets.
    pub node_cgroup: Vec<(usize, PathBuf)>,
}

impl Options {
    /// Nodes connected by the mesh.
    pub fn meshed() -> Self {
        Options {
            mesh: true,
            secret: None,
            env: Vec::new(),
            node_env: Vec::new(),
            node_cgroup: Vec::new(),
        }
    }

    /// Nodes that share the database but have no peers (the mesh is cut).
    pub fn cut() -> Self {
        Options {
            mesh: false,
            ..Self::meshed()
        }
    }

    /// Adds one setting for every node.
    pub fn with(mut self, name: &str, value: &str) -> Self {
        self.env.push((name.to_owned(), value.to_owned()));
        self
    }

    /// Adds one setting for node `i` alone.
    pub fn with_node(mut self, i: usize, name: &str, value: &str) -> Self {
        self.node_env.push((i, name.to_owned(), value.to_owned()));
        self
    }

    /// Starts node `i` (each time) inside the cgroup v2 folder `dir`.
    pub fn in_cgroup(mut self, i: usize, dir: PathBuf) -> Self {
        self.node_cgroup.push((i, dir));
        self
    }

    /// Sets the mesh secret.
    pub fn secret(mut self, secret: &str) -> Self {
        self.secret = Some(secret.to_owned());
        self
    }
}

/// N `queen` processes sharing one database.
pub struct TestCluster {
    nodes: Vec<Node>,
    processes: Vec<Process>,
    database_url: String,
    /// The database, for direct SQL assertions.
    pub pg: tokio_postgres::Config,
    cluster_name: String,
    options: Options,
    dir: Option<tempfile::TempDir>,
}

/// One node's process and log. `child` is `None` once the node exited or was killed on
/// purpose, so teardown only calls a node dead when it went away on its own.
struct Process {
    child: Option<Child>,
    log: PathBuf,
}

impl TestCluster {
    /// Starts `n` nodes (ids `a`, `b`, `c`, ...) on a fresh database and waits until every
    /// one answers `/health`. Ports are chosen free just before the nodes bind them, so
    /// another process can take one in between: a node that could not bind its port makes
    /// the whole cluster start again on new ports (a few times at most).
    pub async fn start(n: usize, options: Options) -> Self {
        let pg = postgres::fresh_installed_database().await;
        // The Citus test mode tests the layout, which a broker takes only when asked (as
        // the in-process brokers are, tests/broker/support/mod.rs): without it the nodes
        // ran on the coordinator's plain, unsharded tables and crossed no worker. Only
        // here: a database given to `start_on` may be a private PostgreSQL without Citus.
        let options = match crate::support::citus::layout() {
            true => options.with("QUEEN_CITUS", "true"),
            false => options,
        };
        Self::start_on(pg, n, options).await
    }

    /// [`start`](Self::start) on a given database (a private server a test stops).
    pub async fn start_on(pg: tokio_postgres::Config, n: usize, options: Options) -> Self {
        for attempt in 1..=START_ATTEMPTS {
            let mut cluster = Self::spawn_all(n, options.clone(), pg.clone());
            let mut failure = None;
            for i in 0..n {
                if let Err(problem) = cluster.wait_healthy(i).await {
                    failure = Some(problem);
                    break;
                }
            }
            match failure {
                None => return cluster,
                Some(StartProblem::PortTaken(_)) if attempt < START_ATTEMPTS => {
                    cluster.stop_quietly();
                }
                Some(StartProblem::PortTaken(message) | StartProblem::Other(message)) => {
                    panic!("{message}")
                }
            }
        }
        unreachable!("the last attempt returns or panics")
    }

    /// Spawns `n` nodes on ports free a moment ago, without waiting for them.
    fn spawn_all(n: usize, options: Options, pg: tokio_postgres::Config) -> Self {
        let database_url = connection_url(&pg);
        let dir = tempfile::Builder::new()
            .prefix("queen-nodes-")
            .tempdir()
            .expect("a folder for the node logs");
        // Every port is taken before any node starts: each node's peer list names them all.
        let nodes: Vec<Node> = (0..n)
            .map(|i| Node::new(node_id(i), free_port(), free_port()))
            .collect();
        let cluster_name = format!(
            "nodes-{}-{}",
            std::process::id(),
            pg.get_dbname().unwrap_or("db")
        );
        let processes = nodes
            .iter()
            .map(|node| Process {
                child: None,
                log: dir.path().join(format!("node-{}.log", node.id)),
            })
            .collect();
        let mut cluster = TestCluster {
            nodes,
            processes,
            database_url,
            pg,
            cluster_name,
            options,
            dir: Some(dir),
        };
        for i in 0..n {
            cluster.spawn(i);
        }
        cluster
    }

    /// Kills every node of a start that is being given up, so teardown finds nothing to
    /// report.
    fn stop_quietly(&mut self) {
        for p in &mut self.processes {
            if let Some(mut child) = p.child.take() {
                signal(&child, libc::SIGKILL);
                let _ = child.wait();
            }
        }
    }

    /// Node `i`.
    pub fn node(&self, i: usize) -> &Node {
        &self.nodes[i]
    }

    /// Every node.
    pub fn nodes(&self) -> &[Node] {
        &self.nodes
    }

    /// The process id of node `i` (for reading its memory from `/proc`).
    pub fn pid(&self, i: usize) -> u32 {
        self.processes[i]
            .child
            .as_ref()
            .expect("the node is running")
            .id()
    }

    /// Kills node `i` with SIGKILL (no shutdown of any kind) and reaps it.
    pub fn kill_hard(&mut self, i: usize) {
        let process = &mut self.processes[i];
        let mut child = process.child.take().expect("the node is running");
        signal(&child, libc::SIGKILL);
        child.wait().expect("reap the killed node");
    }

    /// Starts node `i` again on the same ports and waits until it answers `/health`.
    pub async fn restart(&mut self, i: usize) {
        assert!(
            self.processes[i].child.is_none(),
            "node {i} is still running"
        );
        // The old process's pooled connections are dead: start with a fresh client.
        self.nodes[i].http = super::node::client();
        self.spawn(i);
        if let Err(StartProblem::PortTaken(message) | StartProblem::Other(message)) =
            self.wait_healthy(i).await
        {
            panic!("{message}");
        }
    }

    /// Node `i`'s push spool folder (`FILE_BUFFER_DIR`), beside the node logs.
    pub fn spool_dir(&self, i: usize) -> std::path::PathBuf {
        let dir = self.processes[i].log.parent().expect("the logs' folder");
        dir.join(format!("spool-{}", self.nodes[i].id))
    }

    /// A direct SQL connection to the cluster's database.
    pub async fn sql(&self) -> tokio_postgres::Client {
        let (client, connection) = self
            .pg
            .connect(tokio_postgres::NoTls)
            .await
            .expect("connect to the test database");
        tokio::spawn(connection);
        client
    }

    fn spawn(&mut self, i: usize) {
        let node = &self.nodes[i];
        let mut log = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.processes[i].log)
            .expect("open the node log");
        writeln!(log, "==== node {} starting ====", node.id).expect("write the node log");
        let mut command = Command::new(env!("CARGO_BIN_EXE_queen"));
        command
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("RUST_LOG", "warn")
            .env("QUEEN_BIND_ADDR", "127.0.0.1")
            .env("PORT", node.http_port.to_string())
            .env("DATABASE_URL", &self.database_url)
            // Two cores are shared by every node and the test itself.
            .env("QUEEN_HTTP_WORKERS", "2")
            // Several clusters may run at once on a server limited to 300 connections.
            .env("DB_POOL_SIZE", "12")
            .env("QUEEN_NODE_ID", &node.id)
            .env("QUEEN_MESH_PORT", node.mesh_port.to_string())
            .env("QUEEN_CLUSTER_NAME", &self.cluster_name)
            // Each node's own push spool, kept across its restarts.
            .env("FILE_BUFFER_DIR", self.spool_dir(i));
        if self.options.mesh {
            let peers: Vec<String> = self
                .nodes
                .iter()
                .map(|n| format!("127.0.0.1:{}", n.mesh_port))
                .collect();
            command.env("QUEEN_PEERS", peers.join(","));
        }
        if let Some(secret) = &self.options.secret {
            command.env("QUEEN_MESH_SECRET", secret);
        }
        for (name, value) in &self.options.env {
            command.env(name, value);
        }
        for (_, name, value) in self.options.node_env.iter().filter(|(n, ..)| *n == i) {
            command.env(name, value);
        }
        if let Some((_, dir)) = self.options.node_cgroup.iter().find(|(n, _)| *n == i) {
            join_cgroup_before_exec(&mut command, dir);
        }
        let child = command
            .stdin(Stdio::null())
            .stdout(Stdio::from(log.try_clone().expect("clone the log handle")))
            .stderr(Stdio::from(log))
            .spawn()
            .expect("spawn the queen binary");
        self.processes[i].child = Some(child);
    }

    async fn wait_healthy(&mut self, i: usize) -> Result<(), StartProblem> {
        let (http, url) = (self.nodes[i].http.clone(), self.nodes[i].url_of("/health"));
        let healthy = eventually(START_WITHIN, || {
            let exited = self.processes[i].exited();
            let (http, url) = (http.clone(), url.clone());
            async move {
                if let Some(status) = exited {
                    return Some(Err(status));
                }
                let r = http.get(url).send().await.ok()?;
                r.status().is_success().then_some(Ok(()))
            }
        })
        .await;
        match healthy {
            Some(Ok(())) => Ok(()),
            Some(Err(status)) => {
                let message = format!(
                    "node {} exited with {status} while starting:\n{}",
                    self.nodes[i].id,
                    self.log_tails()
                );
                if tail(&self.processes[i].log, LOG_TAIL_LINES).contains("Address already in use") {
                    Err(StartProblem::PortTaken(message))
                } else {
                    Err(StartProblem::Other(message))
                }
            }
            None => Err(StartProblem::Other(format!(
                "node {} never answered /health within {START_WITHIN:?}:\n{}",
                self.nodes[i].id,
                self.log_tails()
            ))),
        }
    }

    /// The tail of every node's log, labelled.
    pub fn log_tails(&self) -> String {
        self.nodes
            .iter()
            .zip(&self.processes)
            .map(|(node, p)| {
                format!(
                    "---- node {} log (tail, {}) ----\n{}\n",
                    node.id,
                    p.log.display(),
                    tail(&p.log, LOG_TAIL_LINES)
                )
            })
            .collect()
    }
}

/// Why a node did not come up, with its logs.
enum StartProblem {
    /// It could not bind a port chosen free a moment before: start again on new ports.
    PortTaken(String),
    /// Anything else.
    Other(String),
}

impl Drop for TestCluster {
    fn drop(&mut self) {
        let mut problems = Vec::new();
        for (node, p) in self.nodes.iter().zip(&mut self.processes) {
            if let Some(status) = p.exited() {
                problems.push(format!("node {} had exited on its own: {status}", node.id));
            }
        }
        // Stop every node at once, then wait for them all.
        for p in &self.processes {
            if let Some(child) = &p.child {
                signal(child, libc::SIGTERM);
            }
        }
        let deadline = Instant::now() + STOP_WITHIN;
        for (node, p) in self.nodes.iter().zip(&mut self.processes) {
            if let Some(mut child) = p.child.take() {
                if !wait_until(&mut child, deadline) {
                    problems.push(format!("node {} ignored SIGTERM; killed", node.id));
                    signal(&child, libc::SIGKILL);
                    let _ = child.wait();
                }
            }
            if tail(&p.log, usize::MAX).contains("panicked at") {
                problems.push(format!("node {} panicked", node.id));
            }
        }
        let failing = std::thread::panicking() || !problems.is_empty();
        if failing {
            eprintln!("{}", self.log_tails());
            if let Some(dir) = self.dir.take() {
                eprintln!("node logs kept in {}", dir.keep().display());
            }
        }
        if !problems.is_empty() && !std::thread::panicking() {
            panic!("cluster teardown: {}", problems.join("; "));
        }
    }
}

impl Process {
    /// The exit status, if the process is gone (reaping it).
    fn exited(&mut self) -> Option<std::process::ExitStatus> {
        let child = self.child.as_mut()?;
        let status = child.try_wait().expect("poll the node process")?;
        self.child = None;
        Some(status)
    }
}

/// Makes the child write itself into `dir/cgroup.procs` between fork and exec, so every
/// socket it opens belongs to that cgroup.
fn join_cgroup_before_exec(command: &mut Command, dir: &Path) {
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::process::CommandExt;
    let procs = std::ffi::CString::new(dir.join("cgroup.procs").as_os_str().as_bytes())
        .expect("a cgroup path without NUL");
    // SAFETY: between fork and exec the closure calls only open, write and close, which are
    // async-signal-safe, on a path allocated before the fork.
    unsafe {
        command.pre_exec(move || {
            let fd = libc::open(procs.as_ptr(), libc::O_WRONLY);
            if fd < 0 {
                return Err(std::io::Error::last_os_error());
            }
            let written = libc::write(fd, b"0".as_ptr().cast(), 1);
            let error = std::io::Error::last_os_error();
            libc::close(fd);
            if written == 1 {
                Ok(())
            } else {
                Err(error)
            }
        });
    }
}

fn node_id(i: usize) -> String {
    char::from(b'a' + u8::try_from(i).expect("fewer than 26 nodes")).to_string()
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free loopback port")
}

/// `postgresql://USER@/DB?host=SOCKETDIR&port=PORT` for a config on a Unix socket.
fn connection_url(pg: &tokio_postgres::Config) -> String {
    let host = match pg.get_hosts() {
        [Host::Unix(dir), ..] => dir.to_string_lossy().into_owned(),
        [Host::Tcp(name), ..] => name.clone(),
        [] => panic!("the test database config has no host"),
    };
    let port = pg.get_ports().first().copied().unwrap_or(5432);
    let user = pg
        .get_user()
        .expect("the test database config names a user");
    let db = pg
        .get_dbname()
        .expect("the test database config names a db");
    format!(
        "postgresql://{}@/{}?host={}&port={port}",
        encode(user),
        encode(db),
        encode(&host)
    )
}

/// Percent-encodes everything but unreserved characters and `/`.
fn encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' | b'/' => {
                char::from(b).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

fn tail(path: &Path, lines: usize) -> String {
    match std::fs::read(path) {
        Ok(bytes) => {
            let text = String::from_utf8_lossy(&bytes);
            let all: Vec<&str> = text.lines().collect();
            all[all.len().saturating_sub(lines)..].join("\n")
        }
        Err(e) => format!("(cannot read {}: {e})", path.display()),
    }
}
