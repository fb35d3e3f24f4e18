//! Life-cycle tests against real PostgreSQL servers (one per test, each in
//! its own folder). They run as whatever user runs `cargo test`; as root
//! they exercise the switch to the `postgres` user.

use super::*;
use std::os::unix::fs::PermissionsExt;
use tempfile::TempDir;
use tokio_postgres::SimpleQueryMessage;

/// A fresh folder under /tmp that the `postgres` user can enter. Also
/// routes the launcher's logs to the test output (shown on failure).
fn scratch() -> TempDir {
    let _ = tracing_subscriber::fmt()
        .with_env_filter("queen=debug")
        .with_test_writer()
        .try_init();
    let dir = tempfile::Builder::new()
        .prefix("queen-embedded-")
        .tempdir_in("/tmp")
        .unwrap();
    fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o755)).unwrap();
    dir
}

fn options(data_dir: &Path) -> EmbeddedOptions {
    EmbeddedOptions {
        data_dir: data_dir.to_path_buf(),
        port: 5432,
        user: "queen".to_owned(),
        bin_dir: None,
        server_settings: vec![
            ("fsync".to_owned(), "off".to_owned()),
            // Survives pg_ctl's trip through /bin/sh only if quoted right.
            ("cluster_name".to_owned(), "queen's $HOME test".to_owned()),
        ],
    }
}

/// Runs `query` on database `postgres`; returns the first column of each row.
fn sql(pg: &EmbeddedPostgres, query: &str) -> Vec<String> {
    let config = pg.pg_config("postgres");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async move {
        let (client, connection) = config.connect(tokio_postgres::NoTls).await.unwrap();
        let connection = tokio::spawn(connection);
        let messages = client.simple_query(query).await.unwrap();
        drop(client);
        connection.await.unwrap().unwrap();
        messages
            .into_iter()
            .filter_map(|message| match message {
                SimpleQueryMessage::Row(row) => Some(row.get(0).unwrap_or("").to_owned()),
                _ => None,
            })
            .collect()
    })
}

fn postmaster_pid(data_dir: &Path) -> i32 {
    let text = fs::read_to_string(data_dir.join("pgdata/postmaster.pid")).unwrap();
    text.lines().next().unwrap().parse().unwrap()
}

#[test]
fn data_survives_a_restart_and_stopping_twice_is_fine() {
    let dir = scratch();
    let mut pg = EmbeddedPostgres::start(options(dir.path())).unwrap();
    assert!(pg.started_here);
    assert_eq!(
        pg.socket_dir(),
        fs::canonicalize(dir.path()).unwrap().join("socket")
    );
    assert_eq!(sql(&pg, "SHOW listen_addresses"), [""]);
    assert_eq!(sql(&pg, "SHOW fsync"), ["off"]);
    assert_eq!(sql(&pg, "SHOW cluster_name"), ["queen's $HOME test"]);
    sql(
        &pg,
        "CREATE TABLE kept (v text); INSERT INTO kept VALUES ('still here')",
    );
    pg.stop().unwrap();
    assert!(!dir.path().join("pgdata/postmaster.pid").exists());
    pg.stop().unwrap();
    drop(pg);

    let pg = EmbeddedPostgres::start(options(dir.path())).unwrap();
    assert!(pg.started_here);
    assert_eq!(sql(&pg, "SELECT v FROM kept"), ["still here"]);
    let log = fs::read_to_string(pg.log_path()).unwrap();
    assert!(log.contains("ready to accept connections"), "{log}");
}

#[test]
fn a_second_start_adopts_the_running_server_and_leaves_it_running() {
    let dir = scratch();
    let first = EmbeddedPostgres::start(options(dir.path())).unwrap();
    let second = EmbeddedPostgres::start(options(dir.path())).unwrap();
    assert!(!second.started_here);
    assert_eq!(second.pid, first.pid);
    assert_eq!(sql(&second, "SELECT 1"), ["1"]);
    drop(second);
    assert_eq!(sql(&first, "SELECT 2"), ["2"]);
    drop(first);
    assert!(!dir.path().join("pgdata/postmaster.pid").exists());
}

#[test]
fn a_pid_file_naming_a_reused_pid_does_not_block_start() {
    let dir = scratch();
    let mut pg = EmbeddedPostgres::start(options(dir.path())).unwrap();
    pg.stop().unwrap();
    drop(pg);
    // After a reboot the old PID may belong to another process of the same
    // user; PostgreSQL then believes its old server still runs.
    let account = Account::for_this_process().unwrap();
    let squatter = KillOnDrop(
        account
            .command(Path::new("/bin/sleep"))
            .arg("60")
            .spawn()
            .unwrap(),
    );
    let pid_file = format!(
        "{}\n/elsewhere\n0\n5432\n/tmp\n\n0 0\nready\n",
        squatter.0.id()
    );
    fs::write(dir.path().join("pgdata/postmaster.pid"), pid_file).unwrap();
    let pg = EmbeddedPostgres::start(options(dir.path())).unwrap();
    assert!(pg.started_here);
    assert_eq!(sql(&pg, "SELECT 1"), ["1"]);
}

/// Kills and reaps a helper process even if the test fails.
struct KillOnDrop(std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn a_killed_postmaster_is_replaced_and_its_old_handle_leaves_the_new_one_alone() {
    let dir = scratch();
    let old = EmbeddedPostgres::start(options(dir.path())).unwrap();
    sql(
        &old,
        "CREATE TABLE kept (v int); INSERT INTO kept VALUES (7)",
    );
    // SAFETY: kill has no memory-safety preconditions.
    assert_eq!(unsafe { libc::kill(old.pid, libc::SIGKILL) }, 0);

    let new = EmbeddedPostgres::start(options(dir.path())).unwrap();
    assert!(new.started_here);
    assert_ne!(new.pid, old.pid);
    drop(old);
    assert_eq!(sql(&new, "SELECT v FROM kept"), ["7"]);
    assert_eq!(postmaster_pid(dir.path()), new.pid);
}

#[test]
fn a_server_that_exits_while_being_adopted_is_replaced_without_waiting_out_the_timeout() {
    // What a start right after `kill -9` sees: postmaster.pid names a
    // process still working in pgdata (so it looks alive), but it dies
    // before it answers. Here a `sleep` plays that dying postmaster.
    let dir = scratch();
    let mut pg = EmbeddedPostgres::start(options(dir.path())).unwrap();
    pg.stop().unwrap();
    drop(pg);
    let pgdata = fs::canonicalize(dir.path().join("pgdata")).unwrap();
    let dying = KillOnDrop(
        std::process::Command::new("/bin/sleep")
            .arg("1")
            .current_dir(&pgdata)
            .spawn()
            .unwrap(),
    );
    let pid_file = format!(
        "{}\n{}\n0\n5432\n{}\n\n0 0\nready\n",
        dying.0.id(),
        pgdata.display(),
        dir.path().join("socket").display()
    );
    fs::write(pgdata.join("postmaster.pid"), pid_file).unwrap();
    assert!(matches!(postmaster::lock(&pgdata).unwrap(), Lock::Live(_)));

    let began = Instant::now();
    let pg = EmbeddedPostgres::start(options(dir.path())).unwrap();
    assert!(pg.started_here);
    assert_ne!(pg.pid, dying.0.id() as i32);
    assert_eq!(sql(&pg, "SELECT 1"), ["1"]);
    assert!(began.elapsed() < START_TIMEOUT / 2, "{:?}", began.elapsed());
}

#[test]
fn a_missing_bin_dir_says_what_to_install_before_touching_anything() {
    let dir = scratch();
    let data_dir = dir.path().join("data");
    let mut opts = options(&data_dir);
    opts.bin_dir = Some(PathBuf::from("/nonexistent/postgresql/bin"));
    let message = EmbeddedPostgres::start(opts).unwrap_err().to_string();
    assert!(message.contains("/nonexistent/postgresql/bin"), "{message}");
    assert!(
        message.contains("install the Debian package `postgresql` (or set QUEEN_PG_BIN_DIR)"),
        "{message}"
    );
    assert!(!data_dir.exists());
}

#[test]
fn a_long_data_dir_gets_a_short_socket_folder() {
    let dir = scratch();
    let data_dir = dir
        .path()
        .join("a folder, with spaces")
        .join("x".repeat(90));
    let pg = EmbeddedPostgres::start(options(&data_dir)).unwrap();
    let socket_dir = RemoveOnDrop(pg.socket_dir().to_path_buf());
    let shown = socket_dir.0.display().to_string();
    assert!(shown.starts_with("/tmp/queen-pg-"), "{shown}");
    assert_eq!(sql(&pg, "SELECT 1"), ["1"]);
}

/// Removes a folder outside the scratch folder even if the test fails.
struct RemoveOnDrop(PathBuf);

impl Drop for RemoveOnDrop {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

#[test]
fn an_unreachable_data_dir_names_the_folder_in_the_way() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return; // Only root switches users; as anyone else there is no check.
    }
    let dir = scratch();
    let locked = dir.path().join("locked");
    fs::create_dir(&locked).unwrap();
    fs::set_permissions(&locked, fs::Permissions::from_mode(0o700)).unwrap();
    let err = EmbeddedPostgres::start(options(&locked.join("data"))).unwrap_err();
    let message = err.to_string();
    assert!(
        matches!(&err, EmbeddedError::Unreachable { dir, .. } if *dir == locked),
        "{message}"
    );
    assert!(message.contains("QUEEN_DATA_DIR"), "{message}");
}

#[test]
fn as_root_a_cluster_owned_by_someone_else_is_handed_back_to_postgres() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return; // Only root can change owners.
    }
    let dir = scratch();
    let mut pg = EmbeddedPostgres::start(options(dir.path())).unwrap();
    pg.stop().unwrap();
    drop(pg);
    // As if an earlier run had created it as root (or another user).
    let mut pending = vec![dir.path().join("pgdata")];
    while let Some(path) = pending.pop() {
        std::os::unix::fs::lchown(&path, Some(0), Some(0)).unwrap();
        if path.symlink_metadata().unwrap().is_dir() {
            pending.extend(fs::read_dir(&path).unwrap().map(|e| e.unwrap().path()));
        }
    }
    let pg = EmbeddedPostgres::start(options(dir.path())).unwrap();
    assert_eq!(sql(&pg, "SELECT 1"), ["1"]);
}
