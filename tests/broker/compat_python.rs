//! The published Python client (`queen-mq`, pinned below) against this broker, as its
//! users run it: each test here starts a broker on a fresh database and runs one group of
//! the Python suite in `tests/compat/` with pytest, the broker's URL in `QUEEN_COMPAT_URL`.
//! One Rust test per group, so a feature that is missing fails its own group only; the
//! `bearer_token` group runs against a broker with JWT authentication on.
//!
//! The client lives in a virtual environment under the target folder, made by the first
//! test that needs it (a lock file keeps parallel tests and test processes from racing)
//! and reused while its marker names the same pinned packages. Making it needs `python3`
//! with `venv` and the Python package registry; `.ci/run` installs the former.

use std::fs::{self, File};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncRead, BufReader};

use crate::support::TestBroker;

/// The client version the wire contract was written from, with the `zstd` extra that its
/// compressed push and framed pop need on Pythons before 3.14.
const CLIENT: &str = "queen-mq[zstd]==2.6.0";

/// The runner; any recent pytest reads the suite the same way.
const PYTEST: &str = "pytest>=8,<10";

/// A group's whole run. Each Python test has its own 90 s deadline; this only catches a
/// wedged interpreter, and is far inside CI's budget.
const GROUP_DEADLINE: Duration = Duration::from_secs(900);

/// Configure, push (single, batch, duplicates), pop, consume, ack, nack, lease renewal,
/// partitions, consumer groups, subscription modes and long-poll work through the client.
#[actix_rt::test]
async fn the_python_client_runs_the_core_data_path_against_the_broker() {
    run_group("test_core.py").await;
}

/// The client's binary push (flags 4 and 8) and framed pop round-trip the payloads.
#[actix_rt::test]
async fn the_python_client_pushes_binary_bodies_and_pops_framed_answers() {
    run_group("test_binary.py").await;
}

/// The client's transactions (JSON and binary) commit an ack and a push together, and a
/// failing one changes nothing.
#[actix_rt::test]
async fn the_python_client_commits_transactions_all_or_nothing() {
    run_group("test_txn.py").await;
}

/// The client's admin surface: dead letter queue, consumer groups, resources, messages,
/// status and metrics.
#[actix_rt::test]
async fn the_python_client_admin_surface_answers_what_it_reads() {
    run_group("test_admin.py").await;
}

/// Conflation and autopilot through the client: the newest message per partition for a
/// conflating group, and pops the caller left unsized sized by the broker.
#[actix_rt::test]
async fn the_python_client_gets_conflated_and_autopiloted_pops() {
    run_group("test_echoes.py").await;
}

/// The tier-3 read views through the client: `fetch` at the pop's offsets, with no cursor
/// moved, and `changed_since` with its `safeTime`.
#[actix_rt::test]
async fn the_python_client_reads_by_offset_and_discovers_changed_partitions() {
    run_group("test_reads.py").await;
}

/// The key/value store through the client: get, put with compare-and-set,
/// put_if_absent, delete, incr, check, get_prefix and list_all, and `once`.
#[actix_rt::test]
async fn the_python_client_keeps_keys_and_values() {
    run_group("test_kv.py").await;
}

/// Durable timers through the client: schedule, reschedule, peek, list, list_all, cancel,
/// the fluent builder, the `tx.timer(...)` rider, and delivery observed by a pop.
#[actix_rt::test]
async fn the_python_client_schedules_and_cancels_timers() {
    run_group("test_timers.py").await;
}

/// `client.ephemeral` (`tests/compat/test_ephemeral.py`).
#[actix_rt::test]
async fn the_python_client_uses_ephemeral_queues() {
    run_group("test_ephemeral.py").await;
}

/// Locks and semaphores through the client: acquire, a second holder refused, get, renew
/// with a new token, owner-idempotent acquire, semaphore slots, `async with`, and the
/// `LockError` envelope, and a `transaction().guard(lock)` that commits only while held.
#[actix_rt::test]
async fn the_python_client_takes_locks_and_semaphores() {
    run_group("test_locks.py").await;
}

/// Streams through the client: `Stream.from_(...).map(...).to(sink).run(...)` delivers
/// every message into the sink exactly once, and a tumbling-window aggregation keeps its
/// state across cycles, emits the closed windows and leaves the open one open.
#[actix_rt::test]
async fn the_python_client_runs_stream_queries() {
    run_group("test_streams.py").await;
}

/// The client's `bearer_token` against a broker with JWT authentication on: tokens signed
/// here (HS256) for a read-write, a read-only and an admin caller.
#[actix_rt::test]
async fn the_python_client_authenticates_with_its_bearer_token() {
    use crate::support::tokens::{claims, hs256, SECRET};
    let tokens = [
        (
            "QUEEN_COMPAT_TOKEN_WRITER",
            hs256(SECRET, &claims("compat-writer", "read-write")),
        ),
        (
            "QUEEN_COMPAT_TOKEN_READER",
            hs256(SECRET, &claims("compat-reader", "read-only")),
        ),
        (
            "QUEEN_COMPAT_TOKEN_ADMIN",
            hs256(SECRET, &claims("compat-admin", "admin")),
        ),
    ];
    let env: Vec<(&str, &str)> = tokens.iter().map(|(k, v)| (*k, v.as_str())).collect();
    run_group_with(
        "test_auth.py",
        &[("JWT_ENABLED", "true"), ("JWT_SECRET", SECRET)],
        &env,
    )
    .await;
}

/// Runs one file of the Python suite against a fresh broker; fails with pytest's output.
async fn run_group(file: &str) {
    run_group_with(file, &[], &[]).await;
}

/// [`run_group`] on a broker with `settings`, pytest seeing `env` besides the broker's URL.
async fn run_group_with(file: &str, settings: &[(&str, &str)], env: &[(&str, &str)]) {
    // A Python interpreter and a broker under load: keep the timing tests away.
    let _quiet = crate::support::fixtures::TIMING.lock().await;
    // Arrange: the client's environment, then a broker on a fresh database.
    let python = tokio::task::spawn_blocking(venv_python)
        .await
        .expect("the venv task does not panic")
        .unwrap_or_else(|why| panic!("cannot prepare the Python client: {why}"));
    let broker = TestBroker::start_with(settings).await;

    // Act: the suite, its output streamed to ours as it comes.
    let outcome = run_pytest(&python, file, &broker.base, env).await;
    broker.stop().await;

    // Assert: pytest passed every test it collected.
    if let Err(output) = outcome {
        panic!("the Python suite {file} failed against the broker:\n{output}");
    }
}

/// The venv's interpreter, making the venv on first use (once per process; a file lock
/// guards it against other test processes).
fn venv_python() -> Result<PathBuf, String> {
    static VENV: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    VENV.get_or_init(|| {
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("compat-venv");
        fs::create_dir_all(dir.parent().expect("the venv has a parent folder"))
            .map_err(|e| format!("create {}: {e}", dir.display()))?;
        let lock_path = dir.with_extension("lock");
        let lock =
            File::create(&lock_path).map_err(|e| format!("create {}: {e}", lock_path.display()))?;
        // Held until `lock` drops; std's File::lock is newer than this crate's MSRV.
        // SAFETY: flock on a descriptor that `lock` owns and keeps open; no memory is shared.
        if unsafe { libc::flock(lock.as_raw_fd(), libc::LOCK_EX) } != 0 {
            let e = std::io::Error::last_os_error();
            return Err(format!("lock {}: {e}", lock_path.display()));
        }
        let python = dir.join("bin").join("python");
        let marker = dir.join("queen-compat-ready");
        let wanted = format!("{CLIENT}\n{PYTEST}\n");
        if python.exists() && fs::read_to_string(&marker).ok().as_deref() == Some(&wanted) {
            return Ok(python);
        }
        if dir.exists() {
            fs::remove_dir_all(&dir).map_err(|e| format!("remove a stale venv: {e}"))?;
        }
        run_quietly(
            Command::new("python3").args(["-m", "venv"]).arg(&dir),
            "python3 -m venv (on Debian: apt-get install python3-venv)",
        )?;
        run_quietly(
            Command::new(&python).args([
                "-m",
                "pip",
                "install",
                "--disable-pip-version-check",
                "--no-input",
                "--quiet",
                CLIENT,
                PYTEST,
            ]),
            "pip install of the pinned client",
        )?;
        fs::write(&marker, wanted).map_err(|e| format!("write the venv marker: {e}"))?;
        Ok(python)
    })
    .clone()
}

/// Runs a set-up command; on failure returns its output with what it was for.
fn run_quietly(command: &mut Command, what: &str) -> Result<(), String> {
    let output = command
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("{what}: cannot start: {e}"))?;
    if output.status.success() {
        return Ok(());
    }
    Err(format!(
        "{what}: {}\n{}{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    ))
}

/// Runs pytest on one file of `tests/compat/`; `Err` carries the whole output.
async fn run_pytest(
    python: &Path,
    file: &str,
    url: &str,
    env: &[(&str, &str)],
) -> Result<(), String> {
    let suite = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join("compat");
    let mut child = tokio::process::Command::new(python)
        .args([
            "-m",
            "pytest",
            "-v",
            "--tb=short",
            "-p",
            "no:cacheprovider",
            "-rfE",
        ])
        .arg(file)
        .current_dir(&suite)
        .env("QUEEN_COMPAT_URL", url)
        .envs(env.iter().copied())
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .env("PYTHONUNBUFFERED", "1")
        // pytest cuts its summary lines at the terminal width; keep the failure reasons.
        .env("COLUMNS", "240")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("cannot start pytest: {e}"))?;
    let output = Arc::new(Mutex::new(String::new()));
    let stdout = tokio::spawn(echo(child.stdout.take(), output.clone()));
    let stderr = tokio::spawn(echo(child.stderr.take(), output.clone()));
    let status = tokio::time::timeout(GROUP_DEADLINE, child.wait()).await;
    if status.is_err() {
        let _ = child.kill().await;
    }
    let _ = tokio::join!(stdout, stderr);
    let output = output.lock().expect("no echo task panicked").clone();
    match status {
        Ok(Ok(status)) if status.success() => Ok(()),
        Ok(Ok(status)) => Err(format!("pytest exited with {status}\n{}", summary(&output))),
        Ok(Err(e)) => Err(format!("waiting for pytest: {e}\n{output}")),
        Err(_) => Err(format!("pytest ran past {GROUP_DEADLINE:?}\n{output}")),
    }
}

/// pytest's closing summary (one line per failed test) when it got that far, else the
/// whole output. The whole output has already been echoed above the panic.
fn summary(output: &str) -> &str {
    output
        .find("= short test summary info =")
        .and_then(|at| output[..at].rfind('\n').map(|line| &output[line + 1..]))
        .unwrap_or(output)
}

/// Copies a child's stream line by line to our stderr (the test harness shows it live
/// with `--nocapture`) and into `into`.
async fn echo(stream: Option<impl AsyncRead + Unpin>, into: Arc<Mutex<String>>) {
    let Some(stream) = stream else { return };
    let mut lines = BufReader::new(stream).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        eprintln!("{line}");
        let mut all = into.lock().expect("no echo task panicked");
        all.push_str(&line);
        all.push('\n');
    }
}
