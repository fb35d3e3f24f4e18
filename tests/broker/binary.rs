//! The real `queen` binary, started as a newcomer would start it: no database settings, so
//! it creates and runs its own PostgreSQL; it serves, then stops cleanly on SIGTERM and
//! takes its PostgreSQL down with it. Its SQL calls are timed from their tracing spans.

use std::os::unix::fs::PermissionsExt;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::json;

use crate::support::process::{signal, wait_until};
use crate::support::{eventually, free_port};

/// With no database configured the binary runs on its embedded PostgreSQL, serves a push
/// and a pop, and on SIGTERM exits 0 and stops the PostgreSQL it started.
#[actix_rt::test]
async fn the_binary_runs_on_its_embedded_postgres_and_stops_it_on_sigterm() {
    // Arrange: a data folder the unprivileged postgres user can traverse.
    let dir = tempfile::Builder::new()
        .prefix("queen-bin-")
        .tempdir_in("/tmp")
        .expect("temp dir");
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let data_dir = dir.path().join("data");
    let port = free_port();
    let mut child = Running(
        Command::new(env!("CARGO_BIN_EXE_queen"))
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("PORT", port.to_string())
            .env("QUEEN_MESH_PORT", free_port().to_string())
            .env("QUEEN_DATA_DIR", &data_dir)
            .env("QUEEN_EMBEDDED_PG_PORT", free_port().to_string())
            .env("RUST_LOG", "warn")
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn the queen binary"),
    );
    let base = format!("http://127.0.0.1:{port}");
    let http = reqwest::Client::new();

    // Act: wait for health, push, pop.
    let healthy = eventually(Duration::from_secs(90), || {
        let (http, url) = (http.clone(), format!("{base}/health"));
        async move {
            let r = http.get(url).send().await.ok()?;
            r.status().is_success().then_some(())
        }
    })
    .await;
    assert!(healthy.is_some(), "the binary never became healthy");
    let pushed = http
        .post(format!("{base}/api/v1/push"))
        .json(&json!({"items": [{"queue": "smoke", "payload": {"hello": "world"}}]}))
        .send()
        .await
        .unwrap();
    assert!(pushed.status().is_success());
    let popped: serde_json::Value = http
        .get(format!("{base}/api/v1/pop/queue/smoke?autoAck=true"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(popped["messages"][0]["data"], json!({"hello": "world"}));
    // SQL calls are timed from their spans even with RUST_LOG=warn.
    let scrape = http
        .get(format!("{base}/metrics/prometheus"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        scrape.contains(r#"queen_sql_duration_seconds_count{function="log_push_v3"} "#),
        "{scrape}"
    );
    let pid_file = data_dir.join("pgdata").join("postmaster.pid");
    assert!(
        pid_file.exists(),
        "the embedded PostgreSQL is not where it should be"
    );
    // The embedded server flushes whenever its WAL writer writes, so relaxed commits do
    // not signal the WAL writer each (see `EMBEDDED_SERVER_SETTINGS` in src/app.rs).
    assert_eq!(
        embedded_setting(&pid_file, "wal_writer_flush_after").await,
        "0"
    );

    // Assert: SIGTERM stops the broker cleanly and its PostgreSQL with it.
    let rc = unsafe { libc::kill(child.0.id() as i32, libc::SIGTERM) };
    assert_eq!(rc, 0);
    let status = eventually(Duration::from_secs(60), || {
        let status = child.0.try_wait().expect("poll the child");
        async move { status }
    })
    .await;
    let Some(status) = status else {
        let _ = child.0.kill();
        panic!("the binary did not stop within 60 s of SIGTERM");
    };
    assert!(status.success(), "the binary exited with {status}");
    assert!(
        !pid_file.exists(),
        "the embedded PostgreSQL was left running after the broker stopped"
    );
}

/// The broker's process. Dropped while it still runs (an assertion failed before the
/// test's SIGTERM), it gets the SIGTERM the test would have sent, so it stops the
/// PostgreSQL it started, and is killed if it has not stopped within 30 s: no `queen` is
/// left holding the test run's output.
struct Running(std::process::Child);

impl Drop for Running {
    fn drop(&mut self) {
        if !matches!(self.0.try_wait(), Ok(None)) {
            return;
        }
        signal(&self.0, libc::SIGTERM);
        if !wait_until(&mut self.0, Instant::now() + Duration::from_secs(30)) {
            signal(&self.0, libc::SIGKILL);
            let _ = self.0.wait();
        }
    }
}

/// `SHOW name` on the embedded server whose `postmaster.pid` is `pid_file` (its fourth line
/// is the port, its fifth the socket folder), as the broker's own user.
async fn embedded_setting(pid_file: &std::path::Path, name: &str) -> String {
    let pid = std::fs::read_to_string(pid_file).expect("read postmaster.pid");
    let lines: Vec<&str> = pid.lines().collect();
    let mut config = tokio_postgres::Config::new();
    config
        .host_path(lines[4])
        .port(lines[3].parse().expect("the port line"))
        .user("queen")
        .dbname("queen");
    let (client, connection) = config
        .connect(tokio_postgres::NoTls)
        .await
        .expect("connect to the embedded server");
    actix_rt::spawn(connection);
    let row = client
        .query_one(&format!("SHOW {name}"), &[])
        .await
        .expect("SHOW");
    row.get(0)
}
