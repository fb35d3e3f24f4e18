//! The brokers as real `queen` processes on free loopback ports, all on one database and
//! all listed in each other's `QUEEN_PEERS`; started, waited for, and always stopped.

use std::fs::File;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::Context;

use super::wire::metrics;

/// How long a node may take to answer `/health` and then to see all of its peers.
const READY_TIMEOUT: Duration = Duration::from_secs(60);
/// How long a node may take to exit after SIGTERM (it answers parked pops, drains HTTP).
const STOP_TIMEOUT: Duration = Duration::from_secs(15);
/// Broker processes; dropping the value stops them (SIGTERM, then SIGKILL).
pub(crate) struct Cluster {
    pub(crate) nodes: Vec<Node>,
}

pub(crate) struct Node {
    id: String,
    base: String,
    child: Child,
    log: PathBuf,
}

impl Cluster {
    /// Starts `n` nodes on free loopback ports, each listing every node's mesh address,
    /// and waits until each answers `/health` and sees its n-1 peers.
    pub(crate) async fn start(
        n: usize,
        database_url: &str,
        workers: usize,
        dir: &Path,
    ) -> anyhow::Result<Self> {
        let ports = free_ports(2 * n)?;
        let (http_ports, mesh_ports) = ports.split_at(n);
        let peers: Vec<String> = mesh_ports
            .iter()
            .map(|p| format!("127.0.0.1:{p}"))
            .collect();
        let mut cluster = Cluster { nodes: Vec::new() };
        for i in 0..n {
            let id = format!("n{}", i + 1);
            let log = dir.join(format!("cluster{n}-{id}.log"));
            let out = File::create(&log)?;
            let mut command = Command::new(env!("CARGO_BIN_EXE_queen"));
            command
                .env_clear()
                .env("PATH", std::env::var_os("PATH").unwrap_or_default())
                .env("PORT", http_ports[i].to_string())
                .env("QUEEN_MESH_PORT", mesh_ports[i].to_string())
                .env("QUEEN_PEERS", peers.join(","))
                .env("QUEEN_NODE_ID", &id)
                .env("QUEEN_HTTP_WORKERS", workers.to_string())
                .env("DATABASE_URL", database_url)
                .env("RUST_LOG", "warn")
                .env("NO_COLOR", "1")
                .stdin(Stdio::null())
                .stdout(out.try_clone()?)
                .stderr(out);
            // SAFETY: prctl is async-signal-safe and touches no memory of this process; it
            // asks the kernel to kill the broker if the bench dies without stopping it.
            unsafe {
                command.pre_exec(|| {
                    if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) == -1 {
                        return Err(std::io::Error::last_os_error());
                    }
                    Ok(())
                });
            }
            let child = command.spawn().context("start the queen binary")?;
            let base = format!("http://127.0.0.1:{}", http_ports[i]);
            cluster.nodes.push(Node {
                id,
                base,
                child,
                log,
            });
        }
        cluster.wait_ready().await?;
        Ok(cluster)
    }

    async fn wait_ready(&mut self) -> anyhow::Result<()> {
        let http = reqwest::Client::new();
        let deadline = Instant::now() + READY_TIMEOUT;
        let peers = self.nodes.len() as u64 - 1;
        for node in &mut self.nodes {
            loop {
                if let Some(status) = node.child.try_wait()? {
                    let log = std::fs::read_to_string(&node.log).unwrap_or_default();
                    anyhow::bail!("node {} exited ({status}) while starting:\n{log}", node.id);
                }
                let health = http.get(format!("{}/health", node.base)).send().await;
                let ready = match health {
                    Ok(r) if r.status() == 200 => {
                        let m = metrics(&http, &node.base).await?;
                        m["mesh"]["peersConnected"].as_u64() == Some(peers)
                    }
                    _ => false,
                };
                if ready {
                    break;
                }
                anyhow::ensure!(
                    Instant::now() < deadline,
                    "node {} not ready in time",
                    node.id
                );
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
        Ok(())
    }

    pub(crate) fn bases(&self) -> Vec<String> {
        self.nodes.iter().map(|n| n.base.clone()).collect()
    }

    pub(crate) fn pids(&self) -> Vec<u32> {
        self.nodes.iter().map(|n| n.child.id()).collect()
    }

    /// SIGTERM to every node, then waits; a node still up after `STOP_TIMEOUT` is killed.
    /// Stopping twice does nothing.
    pub(crate) fn stop(&mut self) {
        for node in &mut self.nodes {
            if let Ok(None) = node.child.try_wait() {
                // SAFETY: kill(2) on the pid of a child this value owns and has not reaped.
                unsafe { libc::kill(node.child.id() as libc::pid_t, libc::SIGTERM) };
            }
        }
        let deadline = Instant::now() + STOP_TIMEOUT;
        for node in &mut self.nodes {
            while matches!(node.child.try_wait(), Ok(None)) && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(20));
            }
            if let Ok(None) = node.child.try_wait() {
                eprintln!(
                    "node {} ignored SIGTERM for {STOP_TIMEOUT:?}; killing it",
                    node.id
                );
                let _ = node.child.kill();
                let _ = node.child.wait();
            }
        }
    }

    /// What the nodes have logged so far at warn and above (the logs go with the folder).
    pub(crate) fn print_logs(&self) {
        for node in &self.nodes {
            let log = std::fs::read_to_string(&node.log).unwrap_or_default();
            let lines: Vec<&str> = log.lines().collect();
            if !lines.is_empty() {
                println!(
                    "[{} of {}: {} log lines at warn+, first 3]",
                    node.id,
                    self.nodes.len(),
                    lines.len()
                );
                for line in lines.iter().take(3) {
                    println!("  {line}");
                }
            }
        }
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Ports free right now: bound to port 0 together, then released for the brokers.
fn free_ports(count: usize) -> anyhow::Result<Vec<u16>> {
    let listeners = (0..count)
        .map(|_| std::net::TcpListener::bind("127.0.0.1:0"))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(listeners
        .iter()
        .map(|l| l.local_addr().map(|a| a.port()))
        .collect::<Result<Vec<_>, _>>()?)
}
