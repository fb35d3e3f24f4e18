//! The embedded PostgreSQL launcher: a private cluster in a data folder.
//!
//! When no database is configured, the broker keeps its state in a cluster
//! of its own under its data folder; the test harness uses the same code for
//! a throwaway cluster. This module owns that cluster's life cycle: finding
//! the server programs, `initdb` on first use, starting the server on a Unix
//! socket only (no TCP), waiting until it accepts connections, adopting a
//! server that already runs on the folder (e.g. after the broker crashed),
//! clearing a stale `postmaster.pid`, and stopping what it started.
//!
//! It leaves to others: reading configuration (QUEEN_DATA_DIR,
//! QUEEN_PG_BIN_DIR, ... become [`EmbeddedOptions`] elsewhere), connection
//! pools, schema, and log rotation of the server log. Only one launcher may
//! start a given data folder at a time; a second one adopts the first's
//! server instead of starting another.
//!
//! Layout of the data folder: `pgdata/` (PostgreSQL's data directory),
//! `postgres.log` (server log), `socket/` (the socket, unless the path is too
//! long for one; then a private folder under /tmp is used).

mod account;
mod binaries;
mod error;
mod layout;
mod postmaster;
mod steps;
#[cfg(test)]
mod tests;

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use account::Account;
pub use error::EmbeddedError;
use error::IoContext;
use layout::{socket_file, Layout};
use postmaster::{Lock, Probe};
use steps::{clear_stale, initdb, launch, not_ready, prepare_data_dir, prepare_log, run};

/// How long a start may take, recovery after a crash included.
const START_TIMEOUT: Duration = Duration::from_secs(120);
/// How long a stop may take (a fast shutdown still writes a checkpoint).
const STOP_TIMEOUT: Duration = Duration::from_secs(60);

/// How to create and start the private cluster: everything the launcher
/// needs, already resolved from configuration by the caller.
#[derive(Debug, Clone)]
pub struct EmbeddedOptions {
    /// The broker's data folder; created if missing. PostgreSQL's files go
    /// in `pgdata/` inside it.
    pub data_dir: PathBuf,
    /// Names the socket file `.s.PGSQL.<port>`; nothing listens on TCP.
    pub port: u16,
    /// The database superuser initdb creates; it logs in without a password
    /// over the socket, which only the server's own user can reach.
    pub user: String,
    /// Where `initdb` and `pg_ctl` live, overriding the search.
    pub bin_dir: Option<PathBuf>,
    /// Extra `-c name=value` server settings, applied after the launcher's
    /// own (e.g. `fsync=off` for tests).
    pub server_settings: Vec<(String, String)>,
}

/// A running private cluster. Dropping it stops the server if this value
/// started it; a server it merely adopted keeps running.
#[derive(Debug)]
pub struct EmbeddedPostgres {
    layout: Layout,
    socket_dir: PathBuf,
    port: u16,
    user: String,
    pg_ctl: PathBuf,
    account: Account,
    /// The postmaster this value refers to; stopping never touches another.
    pid: i32,
    started_here: bool,
    stopped: AtomicBool,
}

impl EmbeddedPostgres {
    /// Makes sure the cluster exists and its server accepts connections,
    /// blocking until it does: creates the cluster if the folder is new,
    /// adopts a server already running on it (which keeps the settings it
    /// was started with), otherwise starts one.
    pub fn start(opts: EmbeddedOptions) -> Result<Self, EmbeddedError> {
        let began = Instant::now();
        let deadline = began + START_TIMEOUT;
        let binaries = binaries::find(opts.bin_dir.as_deref())?;
        let account = Account::for_this_process()?;
        let mut layout = Layout::new(prepare_data_dir(&opts.data_dir)?);
        account.check_reachable(&layout.data_dir)?;
        if !layout.pgdata.join("PG_VERSION").is_file() {
            initdb(&binaries, &account, &layout, &opts)?;
        }
        account.give_tree_if_foreign(&layout.pgdata)?;
        layout.pgdata = fs::canonicalize(&layout.pgdata)
            .context(|| format!("resolve {}", layout.pgdata.display()))?;
        prepare_log(&layout.log, &account)?;

        // A server we adopt may be dying (killed a moment ago, its process
        // not yet gone): if it exits before it answers, decide again.
        let (pid_file, started_here, socket_dir, port) = loop {
            let (pid_file, started_here) =
                running_or_launched(&binaries, &account, &layout, &opts, began, deadline)?;
            let port = pid_file.port.unwrap_or(opts.port);
            if port != opts.port {
                tracing::warn!(port, wanted = opts.port, "adopted server uses another port");
            }
            let socket_dir = match &pid_file.socket_dir {
                Some(dir) => dir.clone(),
                None => layout.socket_dir(port).path().to_path_buf(),
            };
            let socket = socket_file(&socket_dir, port);
            let mut exited = false;
            let answered = postmaster::poll_until(deadline, || {
                exited = !postmaster::serves(pid_file.pid, &layout.pgdata);
                exited || postmaster::probe(&socket, &opts.user) == Probe::Ready
            });
            if answered && !exited {
                break (pid_file, started_here, socket_dir, port);
            }
            if !answered || started_here {
                return Err(not_ready(began, &layout.log));
            }
            tracing::warn!(
                pid = pid_file.pid,
                "the running server exited before answering"
            );
        };
        tracing::info!(
            data_dir = %layout.data_dir.display(),
            elapsed_ms = began.elapsed().as_millis() as u64,
            pid = pid_file.pid,
            adopted = !started_here,
            "embedded postgres started"
        );
        Ok(Self {
            layout,
            socket_dir,
            port,
            user: opts.user,
            pg_ctl: binaries.pg_ctl,
            account,
            pid: pid_file.pid,
            started_here,
            stopped: AtomicBool::new(false),
        })
    }

    /// Connection settings for database `dbname` over the Unix socket, as
    /// the superuser: what pools and tests connect with.
    pub fn pg_config(&self, dbname: &str) -> tokio_postgres::Config {
        let mut config = tokio_postgres::Config::new();
        config
            .host_path(&self.socket_dir)
            .port(self.port)
            .user(&self.user)
            .dbname(dbname);
        config
    }

    /// The folder holding the server's socket, for tools such as `psql -h`.
    pub fn socket_dir(&self) -> &Path {
        &self.socket_dir
    }

    /// The server log file, to show when something goes wrong.
    pub fn log_path(&self) -> PathBuf {
        self.layout.log.clone()
    }

    /// Stops the server with a fast shutdown (clients are disconnected, a
    /// checkpoint is written) and waits for it to exit. Stopping twice, or
    /// after the server is gone, does nothing.
    pub fn stop(&mut self) -> Result<(), EmbeddedError> {
        self.shutdown("fast")
    }

    /// Stops the server at once, without a checkpoint (the next start runs
    /// crash recovery). For process-exit hooks, which only have `&self` and
    /// no time for a checkpoint, such as the test harness's.
    pub fn stop_immediate(&self) -> Result<(), EmbeddedError> {
        self.shutdown("immediate")
    }

    fn shutdown(&self, mode: &str) -> Result<(), EmbeddedError> {
        if self.stopped.swap(true, Ordering::SeqCst) {
            return Ok(());
        }
        let result = self.shutdown_now(mode);
        if result.is_err() {
            self.stopped.store(false, Ordering::SeqCst);
        }
        result
    }

    fn shutdown_now(&self, mode: &str) -> Result<(), EmbeddedError> {
        if !self.is_running()? {
            return Ok(());
        }
        let began = Instant::now();
        let mut command = self.account.command(&self.pg_ctl);
        command
            .args(["stop", "-w", "-m", mode, "-t"])
            .arg(STOP_TIMEOUT.as_secs().to_string())
            .arg("-D")
            .arg(&self.layout.pgdata);
        if let Err(e) = run(command, "pg_ctl stop") {
            // It may have exited on its own between our check and pg_ctl's.
            if self.is_running()? {
                return Err(e);
            }
        }
        tracing::info!(
            data_dir = %self.layout.data_dir.display(),
            elapsed_ms = began.elapsed().as_millis() as u64,
            mode,
            "embedded postgres stopped"
        );
        Ok(())
    }

    /// Whether the postmaster this value refers to still runs.
    fn is_running(&self) -> Result<bool, EmbeddedError> {
        Ok(matches!(postmaster::lock(&self.layout.pgdata)?, Lock::Live(p) if p.pid == self.pid))
    }
}

/// The postmaster to use: the one already serving the folder, else one
/// started now (after clearing what a dead one left). The flag says which.
fn running_or_launched(
    binaries: &binaries::Binaries,
    account: &Account,
    layout: &Layout,
    opts: &EmbeddedOptions,
    began: Instant,
    deadline: Instant,
) -> Result<(postmaster::PidFile, bool), EmbeddedError> {
    let lock = postmaster::lock(&layout.pgdata)?;
    if let Lock::Live(pid_file) = lock {
        return Ok((pid_file, false));
    }
    let socket_dir = layout.socket_dir(opts.port);
    socket_dir.prepare(account)?;
    if matches!(lock, Lock::Stale) {
        clear_stale(layout, socket_dir.path(), opts.port, deadline)?;
    }
    launch(binaries, account, layout, socket_dir.path(), opts)?;
    match postmaster::lock(&layout.pgdata)? {
        Lock::Live(pid_file) => Ok((pid_file, true)),
        _ => Err(not_ready(began, &layout.log)),
    }
}

impl Drop for EmbeddedPostgres {
    fn drop(&mut self) {
        if self.started_here {
            if let Err(error) = self.stop() {
                tracing::warn!(%error, "could not stop embedded postgres");
            }
        }
    }
}
