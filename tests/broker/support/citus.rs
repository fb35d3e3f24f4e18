//! The Citus test mode: with `QUEEN_TEST_CITUS` naming the cluster script
//! (`cluster.sh`, see bench/citus-tests.sh), [`super::postgres::fresh_database`] hands out
//! databases on a Citus cluster (a coordinator and [`WORKERS`] workers) instead of the
//! embedded PostgreSQL, so every test that takes its database from there runs on Citus.
//!
//! The cluster is started once per test binary, with the script's `start`, in a fresh
//! folder under /tmp, on the coordinator port `QUEEN_TEST_CITUS_PORT` (default 9800;
//! worker i listens at port + i), and stopped with its `stop` at exit. Each fresh database
//! is a copy, on every node, of a template made once per process (see `templates`): the
//! `citus` extension, the workers registered in the coordinator's copy (Citus keeps its
//! node list per database), and for most tests this build's schema laid out already.

use std::path::PathBuf;
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

/// Workers in the test cluster: enough that partitions land on different workers.
pub const WORKERS: u16 = 2;

/// Server settings of every node: durability off, as the embedded test cluster has, room
/// for many brokers' pools (each coordinator backend also holds connections to the
/// workers), and background-worker slots for Citus's maintenance daemon, which runs one
/// per database with the extension on every node (a test run makes a database per test).
/// The write-ahead log is kept small: by default each node keeps up to 1 GB of it, and
/// after a couple of dozen tests it was some 40 % of the cluster's folder (1.5 GB), enough
/// on a shared disk to end a run with "No space left on device".
const NODE_SETTINGS: &str = "fsync=off\nsynchronous_commit=off\nfull_page_writes=off\n\
                             max_connections=1000\nmax_worker_processes=256\n\
                             min_wal_size=32MB\nmax_wal_size=64MB";

/// A running test cluster.
struct Cluster {
    /// The script that started it.
    script: PathBuf,
    /// Its folder (`CITUS_DIR`).
    dir: PathBuf,
    /// The coordinator's port.
    port: u16,
}

/// The cluster, or why it could not start.
static CLUSTER: OnceLock<Result<Cluster, String>> = OnceLock::new();

/// The port of the one worker beyond [`WORKERS`] that [`add_worker`] starts, or why not.
static EXTRA_WORKER: OnceLock<Result<u16, String>> = OnceLock::new();

/// The cluster script when the Citus test mode is on (`QUEEN_TEST_CITUS` set, not empty).
pub fn script() -> Option<PathBuf> {
    std::env::var_os("QUEEN_TEST_CITUS")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
}

/// Whether this test process runs on the Citus layout, where the broker leaves out plain
/// PostgreSQL's one-statement fast paths (docs/scale-out.md, "What runs"): a test that
/// counts which path served a request expects the general path there.
pub fn layout() -> bool {
    script().is_some()
}

/// A new database on the test cluster (started on first call) with the `citus` extension
/// and the workers registered, empty otherwise: laid out for Citus by the broker that
/// first starts on it. A clone of [`EMPTY_TEMPLATE`] (see [`templates`]).
pub async fn fresh_database(script: PathBuf) -> tokio_postgres::Config {
    let port = started(script).await;
    clone(port, EMPTY_TEMPLATE).await
}

/// [`fresh_database`] with this build's schema installed and laid out for Citus already: a
/// clone of [`INSTALLED_TEMPLATE`], on which a broker starts without DDL. What a test
/// that is not about installing the schema starts its broker on.
pub async fn fresh_installed_database(script: PathBuf) -> tokio_postgres::Config {
    let port = started(script).await;
    clone(port, INSTALLED_TEMPLATE).await
}

/// The template of [`fresh_database`]: the extension created and the workers registered.
const EMPTY_TEMPLATE: &str = "queen_template_empty";

/// The template of [`fresh_installed_database`]: [`EMPTY_TEMPLATE`] with the schema.
const INSTALLED_TEMPLATE: &str = "queen_template_installed";

/// The coordinator's port of the test cluster, started and given its [`templates`].
async fn started(script: PathBuf) -> u16 {
    let port = match tokio::task::spawn_blocking(move || cluster(script)).await {
        Ok(port) => port,
        Err(error) => match error.try_into_panic() {
            Ok(panic) => std::panic::resume_unwind(panic),
            Err(error) => panic!("starting the Citus test cluster: {error}"),
        },
    };
    templates(port).await;
    port
}

/// Makes the two template databases, once per test process. A database per test made from
/// nothing cost about 3 s of `CREATE EXTENSION citus` and node registration on the three
/// nodes, and the schema's installation and layout as much again (each twice that on 2
/// busy cores); a copy of a template on each node (`CREATE DATABASE .. TEMPLATE`) takes a
/// fraction of it. Each node copies its own template: the coordinator's copy names the
/// workers by host and port and reaches its shards in the workers' database of its own
/// name, which is the workers' copy.
async fn templates(port: u16) {
    static MADE: tokio::sync::OnceCell<()> = tokio::sync::OnceCell::const_new();
    MADE.get_or_init(|| async {
        create(port, EMPTY_TEMPLATE).await;
        seal(port, EMPTY_TEMPLATE).await;
        let installed = copy(port, EMPTY_TEMPLATE, INSTALLED_TEMPLATE).await;
        let (mut client, connection) = installed
            .connect(tokio_postgres::NoTls)
            .await
            .unwrap_or_else(|e| panic!("connecting to {INSTALLED_TEMPLATE}: {e:?}"));
        let connection = tokio::spawn(connection);
        queen::db::schema::install(&mut client, Some(true))
            .await
            .unwrap_or_else(|e| panic!("installing the schema in {INSTALLED_TEMPLATE}: {e:?}"));
        drop(client);
        let _ = connection.await;
        seal(port, INSTALLED_TEMPLATE).await;
    })
    .await;
}

/// Creates `name` on every node with the extension, and registers the workers in it (Citus
/// keeps its node list per database).
async fn create(port: u16, name: &str) {
    for node in 0..=WORKERS {
        execute(port + node, "postgres", &format!("CREATE DATABASE {name}")).await;
        execute(port + node, name, "CREATE EXTENSION citus").await;
    }
    execute(
        port,
        name,
        &format!("SELECT citus_set_coordinator_host('127.0.0.1', {port})"),
    )
    .await;
    for worker in 1..=WORKERS {
        let at = port + worker;
        add_node(port, name, at).await;
    }
}

/// Closes template `name` to connections on every node and ends the ones it has (Citus's
/// maintenance daemon keeps one per database, and the coordinator's daemon one to each
/// worker): a database is copied only while nobody is connected to it.
async fn seal(port: u16, name: &str) {
    for node in 0..=WORKERS {
        execute(
            port + node,
            "postgres",
            &format!(
                "SET citus.enable_ddl_propagation TO off; \
                 ALTER DATABASE {name} WITH ALLOW_CONNECTIONS false; \
                 SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '{name}'"
            ),
        )
        .await;
    }
}

/// A new database copied from `template` on every node; the coordinator's settings.
async fn clone(port: u16, template: &str) -> tokio_postgres::Config {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    let name = format!("test_{}", NEXT.fetch_add(1, Ordering::Relaxed));
    copy(port, template, &name).await
}

/// Copies `template` as `name` on every node. A backend still leaving the template (ended
/// by [`seal`] a moment ago) makes PostgreSQL refuse the copy for a while: tried again.
///
/// Citus records the database itself among its distributed objects (`pg_dist_object`,
/// by the database's oid), and the copy keeps the template's entry: a worker added later
/// (`add_worker`) was then sent the template's name and refused ("database .. does not
/// exist", and "failure on connection marked as essential" on the coordinator). Each
/// node's copy is made to name itself.
async fn copy(port: u16, template: &str, name: &str) -> tokio_postgres::Config {
    const ATTEMPTS: u32 = 20;
    let sql = format!("CREATE DATABASE {name} TEMPLATE {template}");
    for node in 0..=WORKERS {
        let at = port + node;
        let mut attempt = 1;
        loop {
            match try_execute(at, "postgres", &sql).await {
                Ok(()) => break,
                Err(e) if attempt < ATTEMPTS && e.contains("being accessed by other users") => {
                    attempt += 1;
                    tokio::time::sleep(std::time::Duration::from_millis(250)).await;
                }
                Err(e) => panic!("on Citus node :{at}: {sql}: {e}"),
            }
        }
        execute(
            at,
            name,
            "UPDATE pg_dist_object SET objid = (SELECT oid FROM pg_database \
             WHERE datname = current_database()) WHERE classid = 'pg_database'::regclass",
        )
        .await;
    }
    config(port, name)
}

/// Grows the cluster of `database` (a database [`fresh_database`] gave) by one worker, as
/// an operator adds a node: the cluster script starts worker `WORKERS + 1` (once per test
/// process; later calls reuse it), the database is created there with the extension, and
/// the coordinator registers it with `citus_add_node`. The new worker holds no shard until
/// a rebalance moves some; returns its port.
pub async fn add_worker(database: &tokio_postgres::Config) -> u16 {
    let port = match tokio::task::spawn_blocking(extra_worker).await {
        Ok(port) => port,
        Err(error) => match error.try_into_panic() {
            Ok(panic) => std::panic::resume_unwind(panic),
            Err(error) => panic!("starting one more Citus worker: {error}"),
        },
    };
    let name = database.get_dbname().expect("a fresh database has a name");
    let coordinator = match database.get_ports() {
        [port, ..] => *port,
        [] => panic!("a fresh database has a port"),
    };
    execute(port, "postgres", &format!("CREATE DATABASE {name}")).await;
    execute(port, name, "CREATE EXTENSION citus").await;
    add_node(coordinator, name, port).await;
    port
}

/// Registers the worker at `worker` with the coordinator of `database`. The coordinator's
/// first connection to a worker database made a moment ago sometimes fails ("failure on
/// connection marked as essential"; seen in about one run of fifty on 2 busy cores), so
/// that one error is tried again a few times; `citus_add_node` of a node already added
/// answers its id, so a retry after a lost answer is harmless. Any other error, or the
/// last attempt's, fails the test.
async fn add_node(coordinator: u16, database: &str, worker: u16) {
    const ATTEMPTS: u32 = 5;
    let sql = format!("SELECT citus_add_node('127.0.0.1', {worker})");
    for attempt in 1..ATTEMPTS {
        let (client, connection) = config(coordinator, database)
            .connect(tokio_postgres::NoTls)
            .await
            .unwrap_or_else(|e| {
                panic!("connecting to Citus node :{coordinator}/{database}: {e:?}")
            });
        let connection = tokio::spawn(connection);
        let result = client.batch_execute(&sql).await;
        drop(client);
        let _ = connection.await;
        match result {
            Ok(()) => return,
            Err(e) if format!("{e:?}").contains("failure on connection marked as essential") => {
                eprintln!("citus: {sql} on :{coordinator}/{database}, attempt {attempt}: {e}");
                tokio::time::sleep(std::time::Duration::from_millis(500 * u64::from(attempt)))
                    .await;
            }
            Err(e) => panic!("on Citus node :{coordinator}/{database}: {sql}: {e:?}"),
        }
    }
    execute(coordinator, database, &sql).await;
}

/// Sets `setting` (`name = value`) for `database` (a database [`fresh_database`] gave) on
/// every node of the test cluster, the coordinator, the workers and the one
/// [`add_worker`] starts (start it first if the test needs it there): sessions opened
/// afterwards take it, Citus's own connections between the nodes included. Run before the
/// broker starts. DDL propagation is off for it, so each node gets exactly one.
pub async fn set_on_every_node(database: &tokio_postgres::Config, setting: &str) {
    let name = database.get_dbname().expect("a fresh database has a name");
    let coordinator = match database.get_ports() {
        [port, ..] => *port,
        [] => panic!("a fresh database has a port"),
    };
    let extra = match EXTRA_WORKER.get() {
        Some(Ok(port)) => Some(*port),
        _ => None,
    };
    let sql =
        format!("SET citus.enable_ddl_propagation TO off; ALTER DATABASE {name} SET {setting}");
    for port in (coordinator..=coordinator + WORKERS).chain(extra) {
        execute(port, "postgres", &sql).await;
    }
}

/// The connection settings of `database` (a database [`fresh_database`] gave) on each node
/// of the test cluster, the coordinator first, then the workers in order: for a test that
/// reads or writes what lives on one node only (a local table a trigger on the shards
/// writes).
pub fn every_node(database: &tokio_postgres::Config) -> Vec<tokio_postgres::Config> {
    let name = database.get_dbname().expect("a fresh database has a name");
    let coordinator = match database.get_ports() {
        [port, ..] => *port,
        [] => panic!("a fresh database has a port"),
    };
    (coordinator..=coordinator + WORKERS)
        .map(|port| config(port, name))
        .collect()
}

/// Starts worker `WORKERS + 1` of the test cluster (the script's `start` with one worker
/// more), once; its port.
fn extra_worker() -> u16 {
    let result = EXTRA_WORKER.get_or_init(|| {
        let Some(Ok(cluster)) = CLUSTER.get() else {
            return Err("the Citus test cluster is not running".to_owned());
        };
        let workers = (WORKERS + 1).to_string();
        let out = cluster
            .command(&["start", &workers])
            .output()
            .map_err(|e| format!("cannot run {}: {e}", cluster.script.display()))?;
        if !out.status.success() {
            return Err(format!(
                "{} start {workers} failed: {}{}",
                cluster.script.display(),
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        Ok(cluster.port + WORKERS + 1)
    });
    match result {
        Ok(port) => *port,
        Err(message) => panic!("{message}"),
    }
}

/// The connection settings of a database on the node at `port`.
fn config(port: u16, database: &str) -> tokio_postgres::Config {
    let mut config = tokio_postgres::Config::new();
    config
        .host("127.0.0.1")
        .port(port)
        .user("postgres")
        .dbname(database);
    config
}

/// Runs statements on one node's database; a failure fails the test.
async fn execute(port: u16, database: &str, sql: &str) {
    if let Err(e) = try_execute(port, database, sql).await {
        panic!("on Citus node :{port}/{database}: {sql}: {e}");
    }
}

/// Runs statements on one node's database; the error with its detail when one fails.
async fn try_execute(port: u16, database: &str, sql: &str) -> Result<(), String> {
    let (client, connection) = config(port, database)
        .connect(tokio_postgres::NoTls)
        .await
        .unwrap_or_else(|e| panic!("connecting to Citus node :{port}/{database}: {e:?}"));
    let connection = tokio::spawn(connection);
    let result = client
        .batch_execute(sql)
        .await
        .map_err(|e| format!("{e:?}"));
    drop(client);
    let _ = connection.await;
    result
}

/// The coordinator's port of the started cluster (this blocks on the first call).
fn cluster(script: PathBuf) -> u16 {
    match CLUSTER.get_or_init(|| start(script)) {
        Ok(cluster) => cluster.port,
        Err(message) => panic!("{message}"),
    }
}

/// Starts the cluster in a new folder and registers its stop at exit.
fn start(script: PathBuf) -> Result<Cluster, String> {
    let port: u16 = match std::env::var("QUEEN_TEST_CITUS_PORT") {
        Ok(raw) => raw
            .parse()
            .map_err(|_| format!("QUEEN_TEST_CITUS_PORT={raw} is not a port"))?,
        Err(_) => 9800,
    };
    let dir = tempfile::Builder::new()
        .prefix("queen-citus-")
        .tempdir_in("/tmp")
        .map_err(|e| format!("cannot create the Citus cluster folder: {e}"))?
        .keep();
    // The script runs the servers as the `postgres` user when we are root.
    std::fs::set_permissions(&dir, std::os::unix::fs::PermissionsExt::from_mode(0o755))
        .map_err(|e| format!("cannot open up {}: {e}", dir.display()))?;
    let cluster = Cluster { script, dir, port };
    // SAFETY: `stop_at_exit` takes no arguments and never unwinds.
    if unsafe { libc::atexit(stop_at_exit) } != 0 {
        return Err("cannot register the Citus cluster's exit hook".to_owned());
    }
    let out = cluster
        .command(&["start", &WORKERS.to_string()])
        .output()
        .map_err(|e| format!("cannot run {}: {e}", cluster.script.display()))?;
    if !out.status.success() {
        let _ = cluster.command(&["stop"]).output();
        return Err(format!(
            "{} start {WORKERS} failed: {}{}",
            cluster.script.display(),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(cluster)
}

impl Cluster {
    /// The script with this cluster's folder, port and settings.
    fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(&self.script);
        command
            .args(args)
            .env("CITUS_DIR", &self.dir)
            .env("CITUS_PORT", self.port.to_string())
            .env("CITUS_PG_CONF", NODE_SETTINGS);
        command
    }
}

/// Stops the cluster and deletes its folder (the data is thrown away).
extern "C" fn stop_at_exit() {
    let _ = std::panic::catch_unwind(|| {
        if let Some(Ok(cluster)) = CLUSTER.get() {
            match cluster.command(&["stop"]).output() {
                Ok(out) if out.status.success() => {}
                Ok(out) => eprintln!(
                    "could not stop the Citus test cluster: {}",
                    String::from_utf8_lossy(&out.stderr)
                ),
                Err(e) => eprintln!("could not stop the Citus test cluster: {e}"),
            }
            let _ = std::fs::remove_dir_all(&cluster.dir);
        }
    });
}
