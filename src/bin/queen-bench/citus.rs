//! `run --citus <cluster.sh>`: a Citus cluster (a coordinator and N workers on 127.0.0.1)
//! started for the run with the cluster script of ../shared/citus, in a fresh folder under
//! the work folder, and stopped (its folder removed) when the run ends. The broker this tool
//! starts points at the coordinator with `QUEEN_CITUS=true`; each node's server is metered
//! on its own, so the table shows what a message costs the coordinator and each worker.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::{bail, Context};

/// The nodes' server settings: the embedded server's (src/app.rs), so the figures compare
/// with a plain run's, with room for the connections each coordinator backend opens to the
/// workers.
fn node_settings() -> String {
    let mut lines: Vec<String> = queen::app::EMBEDDED_SERVER_SETTINGS
        .iter()
        .filter(|(name, _)| *name != "max_connections")
        .map(|(name, value)| format!("{name} = '{value}'"))
        .collect();
    lines.push("max_connections = 400".to_owned());
    lines.join("\n")
}

/// A running cluster; stopped on drop.
pub struct CitusCluster {
    script: PathBuf,
    dir: PathBuf,
    /// The coordinator's port; worker i listens at port + i.
    pub port: u16,
    /// Workers.
    pub workers: u16,
}

impl CitusCluster {
    /// Starts a coordinator and `workers` workers with `script`, in a new folder under
    /// `work_dir`, the coordinator on `port`.
    pub fn start(script: &Path, workers: u16, port: u16, work_dir: &Path) -> anyhow::Result<Self> {
        let stamp = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        let dir = work_dir.join(format!("queen-bench-citus-{}-{stamp}", std::process::id()));
        let cluster = Self {
            script: script.to_owned(),
            dir,
            port,
            workers,
        };
        eprintln!(
            "starting a Citus coordinator on :{port} and {workers} workers ({})",
            cluster.dir.display()
        );
        let out = cluster
            .command(&["start", &workers.to_string()])
            .output()
            .with_context(|| format!("running {}", script.display()))?;
        if !out.status.success() {
            bail!(
                "{} start {workers} failed: {}{}",
                script.display(),
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        Ok(cluster)
    }

    /// The coordinator's connection string (what the broker gets as `DATABASE_URL`).
    pub fn dsn(&self) -> String {
        self.node_dsn(self.port)
    }

    /// (name, connection string) of every node, coordinator first.
    pub fn nodes(&self) -> Vec<(String, String)> {
        std::iter::once(("coordinator".to_owned(), self.dsn()))
            .chain((1..=self.workers).map(|i| (format!("worker{i}"), self.node_dsn(self.port + i))))
            .collect()
    }

    fn node_dsn(&self, port: u16) -> String {
        format!("postgresql://postgres@127.0.0.1:{port}/postgres")
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(&self.script);
        command
            .args(args)
            .env("CITUS_DIR", &self.dir)
            .env("CITUS_PORT", self.port.to_string())
            .env("CITUS_PG_CONF", node_settings());
        command
    }
}

impl Drop for CitusCluster {
    fn drop(&mut self) {
        match self.command(&["stop"]).output() {
            Ok(out) if out.status.success() => {
                let _ = std::fs::remove_dir_all(&self.dir);
            }
            Ok(out) => eprintln!(
                "could not stop the Citus cluster in {}: {}",
                self.dir.display(),
                String::from_utf8_lossy(&out.stderr)
            ),
            Err(e) => eprintln!("could not stop the Citus cluster: {e}"),
        }
    }
}
