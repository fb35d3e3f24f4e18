//! What is running on a data directory right now, and whether it answers.
//!
//! PostgreSQL's own stale-lock check (`kill(pid, 0)`) is fooled when the PID
//! in `postmaster.pid` was reused after a reboot, or when the dead postmaster
//! is a zombie nobody reaped (containers without an init). We instead ask
//! Linux which directory the process works in: a postmaster always runs with
//! its data directory as working directory, and a zombie has none.

use std::fs;
use std::io::{ErrorKind, Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::{EmbeddedError, IoContext};

/// The facts `postmaster.pid` records that the launcher uses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PidFile {
    pub(crate) pid: i32,
    pub(crate) port: Option<u16>,
    pub(crate) socket_dir: Option<PathBuf>,
}

impl PidFile {
    /// Parses the documented line layout: pid, data dir, start time, port,
    /// first socket directory, listen address, shared memory key, status.
    fn parse(text: &str) -> Option<Self> {
        let lines: Vec<&str> = text.lines().collect();
        let pid = lines.first()?.trim().parse().ok().filter(|pid| *pid > 0)?;
        let port = lines.get(3).and_then(|l| l.trim().parse().ok());
        let socket_dir = lines
            .get(4)
            .map(|l| l.trim())
            .filter(|l| !l.is_empty())
            .map(PathBuf::from);
        Some(Self {
            pid,
            port,
            socket_dir,
        })
    }
}

/// What `postmaster.pid` in `pgdata` says, split by whether it is true.
#[derive(Debug)]
pub(crate) enum Lock {
    /// No `postmaster.pid`: nothing runs here.
    Absent,
    /// A postmaster that is alive and serving this very directory.
    Live(PidFile),
    /// A leftover from a server that died without cleaning up.
    Stale,
}

/// Reads `pgdata/postmaster.pid` and checks it against the process table.
/// `pgdata` must be canonical (it is compared with `/proc/<pid>/cwd`).
pub(crate) fn lock(pgdata: &Path) -> Result<Lock, EmbeddedError> {
    let path = pgdata.join("postmaster.pid");
    let text = match fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(Lock::Absent),
        Err(e) => return Err(e).context(|| format!("read {}", path.display())),
    };
    Ok(match PidFile::parse(&text) {
        Some(pid_file) if serves(pid_file.pid, pgdata) => Lock::Live(pid_file),
        _ => Lock::Stale,
    })
}

/// True if process `pid` exists, is not a zombie, and works in `pgdata`.
pub(crate) fn serves(pid: i32, pgdata: &Path) -> bool {
    fs::read_link(format!("/proc/{pid}/cwd")).is_ok_and(|cwd| cwd == pgdata)
}

/// Processes (of any PID) working in `pgdata`: after a postmaster is killed
/// its backends linger briefly, and while they hold the old shared memory a
/// new postmaster refuses to start.
pub(crate) fn leftover_processes(pgdata: &Path) -> Vec<i32> {
    let Ok(entries) = fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .filter_map(|entry| entry.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| serves(*pid, pgdata))
        .collect()
}

/// Calls `done` until it returns true or `deadline` passes, backing off
/// from 5 ms to 100 ms between calls. Returns whether `done` succeeded.
pub(crate) fn poll_until(deadline: Instant, mut done: impl FnMut() -> bool) -> bool {
    let mut pause = Duration::from_millis(5);
    loop {
        if done() {
            return true;
        }
        let now = Instant::now();
        if now >= deadline {
            return false;
        }
        std::thread::sleep(pause.min(deadline - now));
        pause = (pause * 2).min(Duration::from_millis(100));
    }
}

/// How a server answered a connection attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Probe {
    /// It accepts connections (or rejects us for a reason that is ours).
    Ready,
    /// It answers but is starting up, shutting down or recovering.
    Starting,
    /// Nothing answers on the socket.
    Down,
}

/// SQLSTATE `cannot_connect_now`: starting, stopping or in recovery.
const CANNOT_CONNECT_NOW: &[u8] = b"57P03";

/// What `pg_isready` does, over the socket file itself: send a startup
/// packet and look at the first reply. Any authentication request means the
/// server accepts connections; an error means so too unless it is 57P03.
pub(crate) fn probe(socket_file: &Path, user: &str) -> Probe {
    let Ok(mut stream) = UnixStream::connect(socket_file) else {
        return Probe::Down;
    };
    let timeout = Some(Duration::from_secs(2));
    if stream.set_read_timeout(timeout).is_err() || stream.set_write_timeout(timeout).is_err() {
        return Probe::Down;
    }
    if stream.write_all(&startup_packet(user)).is_err() {
        return Probe::Down;
    }
    let mut header = [0u8; 5];
    if stream.read_exact(&mut header).is_err() {
        return Probe::Down;
    }
    match header[0] {
        b'R' => {
            // Terminate politely so the server does not log an EOF.
            let _ = stream.write_all(&[b'X', 0, 0, 0, 4]);
            Probe::Ready
        }
        b'E' => {
            let len = u32::from_be_bytes([header[1], header[2], header[3], header[4]]);
            let mut body = vec![0; (len.saturating_sub(4) as usize).min(64 * 1024)];
            if stream.read_exact(&mut body).is_err() {
                return Probe::Down;
            }
            if error_code(&body) == Some(CANNOT_CONNECT_NOW) {
                Probe::Starting
            } else {
                Probe::Ready
            }
        }
        _ => Probe::Down,
    }
}

/// A protocol 3.0 startup message for `user` on database `postgres`.
fn startup_packet(user: &str) -> Vec<u8> {
    let mut body = 196_608_u32.to_be_bytes().to_vec();
    for (key, value) in [("user", user), ("database", "postgres")] {
        body.extend_from_slice(key.as_bytes());
        body.push(0);
        body.extend_from_slice(value.as_bytes());
        body.push(0);
    }
    body.push(0);
    let mut packet = ((body.len() + 4) as u32).to_be_bytes().to_vec();
    packet.extend(body);
    packet
}

/// The `C` (SQLSTATE) field of an ErrorResponse body.
fn error_code(mut body: &[u8]) -> Option<&[u8]> {
    while let Some((&kind, rest)) = body.split_first() {
        if kind == 0 {
            break;
        }
        let end = rest.iter().position(|&b| b == 0)?;
        if kind == b'C' {
            return Some(&rest[..end]);
        }
        body = &rest[end + 1..];
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_a_real_pid_file() {
        let text =
            "5325\n/tmp/exp/pg\n1796230137\n5499\n/tmp/exp/sock\n\n 10010739         4\nready   \n";
        assert_eq!(
            PidFile::parse(text),
            Some(PidFile {
                pid: 5325,
                port: Some(5499),
                socket_dir: Some(PathBuf::from("/tmp/exp/sock")),
            })
        );
    }

    #[test]
    fn a_half_written_pid_file_is_not_trusted() {
        assert_eq!(PidFile::parse(""), None);
        assert_eq!(PidFile::parse("-1\n"), None);
        let early = PidFile::parse("77\n/data\n").unwrap();
        assert_eq!((early.port, early.socket_dir), (None, None));
    }

    #[test]
    fn a_process_elsewhere_does_not_serve_our_directory() {
        let dir = tempfile::tempdir().unwrap();
        let pgdata = fs::canonicalize(dir.path()).unwrap();
        assert!(!serves(std::process::id() as i32, &pgdata));
        assert!(!serves(1, &pgdata));
        fs::write(pgdata.join("postmaster.pid"), "1\n/x\n").unwrap();
        assert!(matches!(lock(&pgdata).unwrap(), Lock::Stale));
        fs::remove_file(pgdata.join("postmaster.pid")).unwrap();
        assert!(matches!(lock(&pgdata).unwrap(), Lock::Absent));
    }

    #[test]
    fn finds_the_sqlstate_among_the_fields() {
        let body = b"SFATAL\0VFATAL\0C57P03\0Mthe database system is starting up\0\0";
        assert_eq!(error_code(body), Some(CANNOT_CONNECT_NOW));
        assert_eq!(error_code(b"SFATAL\0\0"), None);
    }

    #[test]
    fn nothing_listening_is_down() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(
            probe(&dir.path().join(".s.PGSQL.5432"), "queen"),
            Probe::Down
        );
    }

    #[test]
    fn poll_until_gives_up_at_the_deadline() {
        let start = Instant::now();
        assert!(!poll_until(start + Duration::from_millis(30), || false));
        assert!(start.elapsed() >= Duration::from_millis(30));
        let mut calls = 0;
        assert!(poll_until(start, || {
            calls += 1;
            calls == 1
        }));
    }
}
