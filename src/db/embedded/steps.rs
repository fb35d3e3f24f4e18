//! The individual steps of bringing a cluster up: preparing folders,
//! initdb, clearing what a dead server left, `pg_ctl start`, and turning a
//! failed command into an error that carries the server log.

use std::fs::{self, DirBuilder, File, OpenOptions};
use std::io::{ErrorKind, Read, Seek, SeekFrom};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use super::account::Account;
use super::binaries::Binaries;
use super::error::IoContext;
use super::layout::{socket_file, Layout};
use super::{postmaster, EmbeddedError, EmbeddedOptions, START_TIMEOUT};

/// How long to let the backends of a killed postmaster exit on their own.
const LEFTOVER_TIMEOUT: Duration = Duration::from_secs(10);
/// Server log lines quoted in errors.
const LOG_LINES_IN_ERRORS: usize = 20;

/// Creates the data folder and returns its absolute, canonical path.
pub(super) fn prepare_data_dir(data_dir: &Path) -> Result<PathBuf, EmbeddedError> {
    let absolute =
        std::path::absolute(data_dir).context(|| format!("resolve {}", data_dir.display()))?;
    fs::create_dir_all(&absolute).context(|| format!("create {}", absolute.display()))?;
    let canonical =
        fs::canonicalize(&absolute).context(|| format!("resolve {}", absolute.display()))?;
    let quotable = canonical
        .to_str()
        .is_some_and(|s| !s.contains(['"', '\\', '$', '`', '\n']));
    if !quotable {
        return Err(EmbeddedError::UnsupportedPath { path: canonical });
    }
    Ok(canonical)
}

/// Runs initdb into a staging folder, then renames it into place.
pub(super) fn initdb(
    binaries: &Binaries,
    account: &Account,
    layout: &Layout,
    opts: &EmbeddedOptions,
) -> Result<(), EmbeddedError> {
    let began = Instant::now();
    match fs::remove_dir_all(&layout.staging) {
        Err(e) if e.kind() != ErrorKind::NotFound => {
            return Err(e).context(|| format!("remove {}", layout.staging.display()))
        }
        _ => {}
    }
    DirBuilder::new()
        .mode(0o700)
        .create(&layout.staging)
        .context(|| format!("create {}", layout.staging.display()))?;
    account.give(&layout.staging)?;
    let mut command = account.command(&binaries.initdb);
    command
        .arg("-D")
        .arg(&layout.staging)
        .arg("-U")
        .arg(&opts.user)
        .args(["--auth=trust", "--encoding=UTF8", "--no-locale"]);
    // A cluster that will run without fsync needs no fsync at creation.
    if opts.server_settings.iter().any(|(name, value)| {
        name.eq_ignore_ascii_case("fsync") && ["off", "false", "0", "no"].contains(&value.as_str())
    }) {
        command.arg("--no-sync");
    }
    run(command, "initdb")?;
    fs::rename(&layout.staging, &layout.pgdata)
        .context(|| format!("rename {} to pgdata", layout.staging.display()))?;
    tracing::info!(
        data_dir = %layout.data_dir.display(),
        elapsed_ms = began.elapsed().as_millis() as u64,
        "embedded postgres cluster created"
    );
    Ok(())
}

/// Creates the server log if needed so the server's user can append to it.
pub(super) fn prepare_log(log: &Path, account: &Account) -> Result<(), EmbeddedError> {
    OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .open(log)
        .context(|| format!("create {}", log.display()))?;
    account.give(log)
}

/// Removes what a dead server left behind, once its backends are gone.
pub(super) fn clear_stale(
    layout: &Layout,
    socket_dir: &Path,
    port: u16,
    deadline: Instant,
) -> Result<(), EmbeddedError> {
    tracing::warn!(data_dir = %layout.data_dir.display(), "removing stale postmaster.pid");
    let wait_until = deadline.min(Instant::now() + LEFTOVER_TIMEOUT);
    if !postmaster::poll_until(wait_until, || {
        postmaster::leftover_processes(&layout.pgdata).is_empty()
    }) {
        tracing::warn!("processes of the previous postgres server are still running");
    }
    let mut socket_lock = socket_file(socket_dir, port).into_os_string();
    socket_lock.push(".lock");
    for path in [layout.pgdata.join("postmaster.pid"), socket_lock.into()] {
        match fs::remove_file(&path) {
            Err(e) if e.kind() != ErrorKind::NotFound => {
                return Err(e).context(|| format!("remove {}", path.display()))
            }
            _ => {}
        }
    }
    Ok(())
}

/// `pg_ctl start -w`, socket only, with our settings then the caller's.
pub(super) fn launch(
    binaries: &Binaries,
    account: &Account,
    layout: &Layout,
    socket_dir: &Path,
    opts: &EmbeddedOptions,
) -> Result<(), EmbeddedError> {
    let own = [
        ("listen_addresses".to_owned(), String::new()),
        // Double quotes keep spaces and commas inside the directory list.
        (
            "unix_socket_directories".to_owned(),
            format!("\"{}\"", socket_dir.display()),
        ),
        ("port".to_owned(), opts.port.to_string()),
    ];
    // pg_ctl hands these to /bin/sh: quote each `-c name=value` word.
    let options: Vec<String> = own
        .iter()
        .chain(&opts.server_settings)
        .map(|(name, value)| format!("-c '{}'", format!("{name}={value}").replace('\'', r"'\''")))
        .collect();
    let mut command = account.command(&binaries.pg_ctl);
    command
        .args(["start", "-w", "-t"])
        .arg(START_TIMEOUT.as_secs().to_string())
        .arg("-D")
        .arg(&layout.pgdata)
        .arg("-l")
        .arg(&layout.log)
        .arg("-o")
        .arg(options.join(" "));
    run(command, "pg_ctl start").map_err(|error| match error {
        EmbeddedError::Command {
            program,
            status,
            output,
        } => EmbeddedError::Command {
            program,
            status,
            output: format!(
                "{output}\nthe server log ends with:\n{}",
                log_tail(&layout.log, LOG_LINES_IN_ERRORS)
            ),
        },
        other => other,
    })
}

/// The error for a server that never came up, with the end of its log.
pub(super) fn not_ready(began: Instant, log: &Path) -> EmbeddedError {
    EmbeddedError::NotReady {
        waited: began.elapsed(),
        log_tail: log_tail(log, LOG_LINES_IN_ERRORS),
    }
}

/// Runs a command to completion; its output becomes the error on failure.
pub(super) fn run(mut command: Command, program: &str) -> Result<(), EmbeddedError> {
    let output = command.output().context(|| format!("run {program}"))?;
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    let text = text.trim();
    if output.status.success() {
        tracing::debug!(program, output = text, "command succeeded");
        Ok(())
    } else {
        Err(EmbeddedError::Command {
            program: program.to_owned(),
            status: output.status.to_string(),
            output: text.to_owned(),
        })
    }
}

/// The last `lines` lines of a log that may be large (reads 64 KiB at most).
pub(super) fn log_tail(path: &Path, lines: usize) -> String {
    const WINDOW: u64 = 64 * 1024;
    let mut bytes = Vec::new();
    let read = File::open(path).and_then(|mut file| {
        let len = file.metadata()?.len();
        file.seek(SeekFrom::Start(len.saturating_sub(WINDOW)))?;
        file.read_to_end(&mut bytes)
    });
    if read.is_err() {
        return String::new();
    }
    let text = String::from_utf8_lossy(&bytes);
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}
