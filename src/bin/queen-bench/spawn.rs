//! Starting the broker binary for a run: a fresh temporary folder under /tmp (mode 0755, so
//! the `postgres` user can reach the embedded cluster when we run as root), a free port, the
//! embedded PostgreSQL, and a stop that leaves nothing behind.

use std::fs;
use std::net::TcpListener;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{bail, Context};

/// initdb plus the first start can take a while on a busy machine.
const READY_TIMEOUT: Duration = Duration::from_secs(120);
/// A graceful stop also stops the embedded PostgreSQL (which writes a checkpoint).
const STOP_TIMEOUT: Duration = Duration::from_secs(60);
/// How many times a start is tried when a port it picked was taken before the broker bound it.
const START_ATTEMPTS: u32 = 3;
/// What the broker's log says when its listener's port is taken.
const PORT_TAKEN: &str = "Address already in use";
/// Names the embedded cluster's socket file; nothing listens on TCP, so any value works.
const EMBEDDED_PG_PORT: u16 = 5433;

/// A broker this tool started; stopped (and its folder removed) on drop.
pub struct SpawnedBroker {
    child: Option<Child>,
    dir: PathBuf,
    /// The broker's base URL.
    pub url: String,
    /// Connection string of its embedded PostgreSQL.
    pub database_url: String,
}

impl SpawnedBroker {
    /// Starts `binary` with `extra_env` on top of the tool's settings, its data in a fresh
    /// folder under `work_dir`, and waits for /health. A start whose port was taken
    /// meanwhile is tried again on new ports: they are free when picked, but the broker
    /// binds them only after initdb, and an outgoing connection of anything on the machine
    /// may take one of them first.
    pub async fn start(
        binary: &Path,
        extra_env: &[(String, String)],
        work_dir: &Path,
    ) -> anyhow::Result<Self> {
        let mut attempt = 1;
        loop {
            match Self::start_once(binary, extra_env, work_dir).await {
                Err(e) if attempt < START_ATTEMPTS && e.to_string().contains(PORT_TAKEN) => {
                    eprintln!("queen-bench: a port was taken before the broker bound it; again");
                    attempt += 1;
                }
                started => return started,
            }
        }
    }

    /// One start of [`SpawnedBroker::start`] on newly picked ports.
    async fn start_once(
        binary: &Path,
        extra_env: &[(String, String)],
        work_dir: &Path,
    ) -> anyhow::Result<Self> {
        if !binary.is_file() {
            bail!(
                "broker binary {} not found: run `cargo build --release` first, or pass --broker-bin",
                binary.display()
            );
        }
        let stamp = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        let dir = work_dir.join(format!("queen-bench-{}-{stamp}", std::process::id()));
        fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        fs::set_permissions(&dir, fs::Permissions::from_mode(0o755))?;
        let port = free_port()?;
        let log = fs::File::create(dir.join("broker.log"))?;
        let data = dir.join("data");
        let mut command = Command::new(binary);
        command
            .env("PORT", port.to_string())
            .env("QUEEN_MESH_PORT", free_port()?.to_string())
            .env("QUEEN_DATA_DIR", &data)
            .env("QUEEN_EMBEDDED_PG_PORT", EMBEDDED_PG_PORT.to_string())
            .env("RUST_LOG", "warn")
            .env_remove("DATABASE_URL")
            .env_remove("PG_HOST")
            .envs(extra_env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log);
        let child = command
            .spawn()
            .with_context(|| format!("starting {}", binary.display()))?;
        let mut broker = Self {
            child: Some(child),
            url: format!("http://127.0.0.1:{port}"),
            database_url: format!(
                "host={} port={EMBEDDED_PG_PORT} user=queen dbname=queen",
                data.join("socket").display()
            ),
            dir,
        };
        broker.wait_ready().await?;
        Ok(broker)
    }

    /// The broker's process id.
    pub fn pid(&self) -> Option<i32> {
        self.child.as_ref().map(|c| c.id() as i32)
    }

    async fn wait_ready(&mut self) -> anyhow::Result<()> {
        let http = reqwest::Client::new();
        let deadline = Instant::now() + READY_TIMEOUT;
        let health = format!("{}/health", self.url);
        loop {
            if let Some(child) = self.child.as_mut() {
                if let Some(status) = child.try_wait()? {
                    bail!(
                        "the broker exited ({status}) before it was ready; its log ends with:\n{}",
                        self.log_tail()
                    );
                }
            }
            if let Ok(r) = http.get(&health).send().await {
                if r.status().is_success() {
                    return Ok(());
                }
            }
            if Instant::now() > deadline {
                bail!(
                    "the broker was not healthy after {READY_TIMEOUT:?}; its log ends with:\n{}",
                    self.log_tail()
                );
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    fn log_tail(&self) -> String {
        let text = fs::read_to_string(self.dir.join("broker.log")).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(30)..].join("\n")
    }

    /// SIGTERM, wait (the broker stops its PostgreSQL), then remove the folder.
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            // SAFETY: kill with a pid we spawned and have not reaped yet.
            unsafe {
                libc::kill(child.id() as i32, libc::SIGTERM);
            }
            let deadline = Instant::now() + STOP_TIMEOUT;
            loop {
                match child.try_wait() {
                    Ok(Some(_)) => break,
                    Ok(None) if Instant::now() < deadline => {
                        std::thread::sleep(Duration::from_millis(50))
                    }
                    _ => {
                        eprintln!("queen-bench: the broker did not stop in time; killing it");
                        let _ = child.kill();
                        let _ = child.wait();
                        break;
                    }
                }
            }
        }
        if self.dir.exists() {
            if let Err(e) = fs::remove_dir_all(&self.dir) {
                eprintln!("queen-bench: could not remove {}: {e}", self.dir.display());
            }
        }
    }
}

impl Drop for SpawnedBroker {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A TCP port nothing listens on now (for a broker's HTTP or mesh port).
pub fn free_port() -> anyhow::Result<u16> {
    let listener = TcpListener::bind("127.0.0.1:0").context("finding a free port")?;
    Ok(listener.local_addr()?.port())
}

/// `queen` beside this binary (both land in target/release).
pub fn default_binary() -> anyhow::Result<PathBuf> {
    let me = std::env::current_exe().context("locating queen-bench")?;
    Ok(me.with_file_name("queen"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A broker that cannot bind its port is started again on new ports, up to
    /// [`START_ATTEMPTS`] times; any other failure is not.
    #[tokio::test]
    async fn a_start_whose_port_was_taken_is_tried_again_on_new_ports() {
        // Arrange: stand-ins for the broker that fail as a taken port or as anything else,
        // each counting its starts.
        let dir = std::env::temp_dir().join(format!("queen-bench-spawn-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let stand_in = |name: &str, message: &str| {
            let script = dir.join(name);
            let count = dir.join(format!("{name}.starts"));
            fs::write(
                &script,
                format!(
                    "#!/bin/sh\necho start >> {}\necho 'queen: {message}'\nexit 1\n",
                    count.display()
                ),
            )
            .unwrap();
            fs::set_permissions(&script, fs::Permissions::from_mode(0o755)).unwrap();
            (script, count)
        };
        let (taken, taken_count) = stand_in(
            "taken",
            "mesh listener failed on 127.0.0.1:1: Address already in use",
        );
        let (other, other_count) = stand_in("other", "bad configuration");
        let starts = |count: &Path| fs::read_to_string(count).unwrap().lines().count();

        // Act
        let taken_result = SpawnedBroker::start(&taken, &[], &dir).await;
        let other_result = SpawnedBroker::start(&other, &[], &dir).await;

        // Assert
        assert!(taken_result.is_err());
        assert!(other_result.is_err());
        assert_eq!(starts(&taken_count), START_ATTEMPTS as usize);
        assert_eq!(starts(&other_count), 1);
        fs::remove_dir_all(&dir).unwrap();
    }
}
