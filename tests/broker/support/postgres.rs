//! One embedded PostgreSQL cluster per test binary, shared by every test.
//!
//! The cluster lives in a fresh folder under /tmp, starts on first use, and
//! runs with durability off: tests never need to survive a crash. Each test
//! takes its own database from [`fresh_database`], so tests run in parallel
//! without seeing each other's rows.
//!
//! Statics are never dropped, so an `atexit` hook stops the server and
//! deletes its folder when the test process exits. If the process is killed
//! (SIGKILL), the hook cannot run: the server and its `/tmp/queen-test-*`
//! folder stay behind.
//!
//! Set QUEEN_PG_BIN_DIR to test against PostgreSQL programs in another place, and
//! QUEEN_TEST_CITUS to take every fresh database from a Citus cluster instead
//! ([`super::citus`]).

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

use queen::db::embedded::{EmbeddedOptions, EmbeddedPostgres};

/// Server settings that trade durability for speed.
const TEST_SETTINGS: &[(&str, &str)] = &[
    ("fsync", "off"),
    ("synchronous_commit", "off"),
    ("full_page_writes", "off"),
    ("max_connections", "300"),
    ("shared_buffers", "128MB"),
];

/// The cluster, or why it could not start (kept so every test fails with
/// the same message instead of each trying again).
static CLUSTER: OnceLock<Result<EmbeddedPostgres, String>> = OnceLock::new();
/// The cluster's folder, removed at exit.
static DATA_DIR: OnceLock<PathBuf> = OnceLock::new();

/// The test binary's cluster, started on first call (this blocks).
pub fn shared_cluster() -> &'static EmbeddedPostgres {
    match CLUSTER.get_or_init(start_cluster) {
        Ok(cluster) => cluster,
        Err(message) => panic!("{message}"),
    }
}

/// Creates a new, uniquely named database on the shared cluster and returns its connection config.
pub async fn fresh_database() -> tokio_postgres::Config {
    match super::citus::script() {
        Some(script) => super::citus::fresh_database(script).await,
        None => fresh_plain_database().await,
    }
}

/// A new database for a broker that a test starts only to use (not to watch it install the
/// schema): on the Citus test cluster a copy of one with this build's schema laid out
/// already, which saves each such test the layout's DDL on three nodes; on the embedded
/// PostgreSQL an empty one, whose installation takes a fraction of a second.
pub async fn fresh_installed_database() -> tokio_postgres::Config {
    match super::citus::script() {
        Some(script) => super::citus::fresh_installed_database(script).await,
        None => fresh_plain_database().await,
    }
}

/// [`fresh_database`] on the embedded PostgreSQL whatever the test mode: for tests about
/// a database without Citus.
pub async fn fresh_plain_database() -> tokio_postgres::Config {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    // The first call starts the cluster: keep that off the async runtime.
    let cluster = match tokio::task::spawn_blocking(shared_cluster).await {
        Ok(cluster) => cluster,
        Err(error) => match error.try_into_panic() {
            Ok(panic) => std::panic::resume_unwind(panic),
            Err(error) => panic!("starting the test cluster: {error}"),
        },
    };
    let name = format!("test_{}", NEXT.fetch_add(1, Ordering::Relaxed));
    let (client, connection) = cluster
        .pg_config("postgres")
        .connect(tokio_postgres::NoTls)
        .await
        .unwrap_or_else(|e| panic!("connecting to the test cluster: {e}\n{}", log_tail(20)));
    let connection = tokio::spawn(connection);
    client
        .batch_execute(&format!("CREATE DATABASE {name}"))
        .await
        .unwrap_or_else(|e| panic!("creating database {name}: {e}\n{}", log_tail(20)));
    drop(client);
    let _ = connection.await;
    cluster.pg_config(&name)
}

/// The last `lines` lines of the server log, for printing when a test fails.
pub fn log_tail(lines: usize) -> String {
    let Some(Ok(cluster)) = CLUSTER.get() else {
        return String::from("(the test cluster is not running)");
    };
    let path = cluster.log_path();
    match fs::read(&path) {
        Ok(bytes) => {
            let text = String::from_utf8_lossy(&bytes);
            let all: Vec<&str> = text.lines().collect();
            all[all.len().saturating_sub(lines)..].join("\n")
        }
        Err(e) => format!("(cannot read {}: {e})", path.display()),
    }
}

fn start_cluster() -> Result<EmbeddedPostgres, String> {
    // A short path under /tmp, whatever TMPDIR says: the socket path must
    // stay short and the `postgres` user (when we are root) must reach it.
    let dir = tempfile::Builder::new()
        .prefix("queen-test-")
        .tempdir_in("/tmp")
        .map_err(|e| format!("cannot create the test cluster folder: {e}"))?
        .keep();
    // Register cleanup before starting, so the folder goes even if that fails.
    let _ = DATA_DIR.set(dir.clone());
    // SAFETY: `remove_at_exit` takes no arguments and never unwinds.
    if unsafe { libc::atexit(remove_at_exit) } != 0 {
        return Err("cannot register the test cluster's exit hook".to_owned());
    }
    fs::set_permissions(&dir, fs::Permissions::from_mode(0o755))
        .map_err(|e| format!("cannot open up {}: {e}", dir.display()))?;
    EmbeddedPostgres::start(EmbeddedOptions {
        data_dir: dir.clone(),
        port: 5432,
        user: "queen".to_owned(),
        bin_dir: std::env::var_os("QUEEN_PG_BIN_DIR").map(PathBuf::from),
        server_settings: TEST_SETTINGS
            .iter()
            .map(|(name, value)| (name.to_string(), value.to_string()))
            .collect(),
    })
    .map_err(|e| format!("cannot start the test cluster in {}: {e}", dir.display()))
}

/// Stops the server at once (its data is thrown away) and deletes its folder.
extern "C" fn remove_at_exit() {
    let _ = std::panic::catch_unwind(|| {
        if let Some(Ok(cluster)) = CLUSTER.get() {
            if let Err(e) = cluster.stop_immediate() {
                eprintln!("could not stop the test cluster: {e}");
            }
        }
        if let Some(dir) = DATA_DIR.get() {
            let _ = fs::remove_dir_all(dir);
        }
    });
}
