//! The test harness itself: the shared PostgreSQL cluster has the test settings, fresh
//! databases are isolated, and nothing outlives the test process.

use std::path::Path;
use std::process::Command;

use crate::support::postgres::{fresh_database, log_tail, shared_cluster};
use tokio_postgres::{Client, NoTls};

async fn connect(config: &tokio_postgres::Config) -> Client {
    let (client, connection) = config.connect(NoTls).await.unwrap();
    tokio::spawn(connection);
    client
}

async fn one(client: &Client, query: &str) -> String {
    client.query_one(query, &[]).await.unwrap().get(0)
}

#[tokio::test]
async fn the_shared_cluster_runs_with_test_settings() {
    let client = connect(&fresh_database().await).await;
    assert_eq!(one(&client, "SHOW fsync").await, "off");
    assert_eq!(one(&client, "SHOW synchronous_commit").await, "off");
    assert_eq!(one(&client, "SHOW full_page_writes").await, "off");
    assert_eq!(one(&client, "SHOW max_connections").await, "300");
    assert_eq!(one(&client, "SHOW shared_buffers").await, "128MB");
    assert!(std::ptr::eq(shared_cluster(), shared_cluster()));
    // The whole log: tests running beside this one can write more than a screenful of
    // errors on purpose (deadlocks a retry absorbs) after the start-up line.
    let log = log_tail(usize::MAX);
    assert!(
        log.contains("ready to accept connections"),
        "{}",
        log_tail(100)
    );
}

#[tokio::test]
async fn fresh_databases_are_distinct_and_usable() {
    let (a, b) = (fresh_database().await, fresh_database().await);
    assert_ne!(a.get_dbname(), b.get_dbname());
    let (a_client, b_client) = (connect(&a).await, connect(&b).await);
    assert_eq!(
        Some(
            one(&a_client, "SELECT current_database()::text")
                .await
                .as_str()
        ),
        a.get_dbname()
    );
    a_client
        .batch_execute("CREATE TABLE only_in_a (v int); INSERT INTO only_in_a VALUES (1)")
        .await
        .unwrap();
    let count: i64 = a_client
        .query_one("SELECT count(*) FROM only_in_a", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(count, 1);
    assert!(b_client
        .query("SELECT * FROM only_in_a", &[])
        .await
        .is_err());
}

/// Run by `the_cluster_does_not_outlive_the_test_process` in a child process.
#[test]
#[ignore = "run in a child process by the_cluster_does_not_outlive_the_test_process"]
fn child_reports_its_cluster() {
    let data_dir = shared_cluster().log_path().parent().unwrap().to_owned();
    println!("QUEEN_TEST_DATA_DIR={}", data_dir.display());
}

#[test]
fn the_cluster_does_not_outlive_the_test_process() {
    let output = Command::new(std::env::current_exe().unwrap())
        .args([
            "--ignored",
            "--exact",
            "harness::child_reports_its_cluster",
            "--nocapture",
        ])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}");
    let data_dir = stdout
        .lines()
        .find_map(|line| line.strip_prefix("QUEEN_TEST_DATA_DIR="))
        .unwrap_or_else(|| panic!("the child did not report its cluster:\n{stdout}"));
    assert!(!Path::new(data_dir).exists(), "{data_dir} is left behind");
    // A postmaster and its backends work inside their data directory (shown
    // as "<path> (deleted)" once the folder is gone).
    let survivors: Vec<_> = std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(Result::ok)
        .filter(|entry| {
            std::fs::read_link(entry.path().join("cwd"))
                .is_ok_and(|cwd| cwd.to_string_lossy().starts_with(data_dir))
        })
        .map(|entry| entry.file_name())
        .collect();
    assert!(survivors.is_empty(), "still running: {survivors:?}");
}
