//! The schema installer: versioned migrations from the embedded `sql/` files.
//!
//! Each file is one migration, applied once, in the order of its number, and recorded in
//! `queen.schema_migrations` (refinery's history table: version, name, when, checksum).
//! refinery does the bookkeeping; this file adds what it leaves to its caller:
//!
//! - a fast path: when every embedded file is already recorded with its checksum, start-up
//!   reads that table and nothing else (no lock, no DDL, so no lock on a hot table and no
//!   "already exists" notices);
//! - a cluster-wide advisory lock (the key older brokers took per transaction, so a rolling
//!   upgrade with them still applies one at a time), and a `lock_timeout` so a migration that
//!   needs a hot table gives up instead of queueing live traffic behind it.
//!
//! Files are refinery's *unversioned* kind (`U`): a file numbered below one already applied
//! (added later on another branch) is still applied, instead of refused. A file is never
//! edited once shipped: a changed checksum stops the start with an error naming it. A
//! database from before migrations (every file applied at each start, recorded in
//! `queen.schema_files`) has no history yet: every file runs once more, which is safe
//! because each is re-runnable (create-or-replace, if-not-exists), then is recorded.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use refinery::{Migration, Runner};
use tokio_postgres::Client;
use tracing::{debug, info};

use super::DbError;

/// Adds one `sql/` file to [`FILES`]: `sql_file!("044_name.sql")`.
macro_rules! sql_file {
    ($file:literal) => {
        ($file, include_str!(concat!("../../sql/", $file)))
    };
}

/// The `sql/` files, in the order they are applied. A new file is one line here.
pub const FILES: &[(&str, &str)] = &[
    sql_file!("001_schema.sql"),
    sql_file!("002_log_push.sql"),
    sql_file!("003_log_pop.sql"),
    sql_file!("004_log_pop_specific.sql"),
    sql_file!("005_log_pop_wildcard.sql"),
    sql_file!("006_log_pop_discover.sql"),
    sql_file!("007_log_has_pending.sql"),
    sql_file!("008_log_ack.sql"),
    sql_file!("009_log_lease_extend.sql"),
    sql_file!("010_configure_queue.sql"),
    sql_file!("011_log_pop_list.sql"),
    sql_file!("012_log_pending_partitions.sql"),
    sql_file!("013_system_state.sql"),
    sql_file!("014_group_conflation.sql"),
    sql_file!("015_txn_hash.sql"),
    sql_file!("016_log_push_v2.sql"),
    sql_file!("017_log_ack_v2.sql"),
    sql_file!("018_log_pop_v2.sql"),
    sql_file!("020_lease_require.sql"),
    sql_file!("030_consumer_group_lags.sql"),
    sql_file!("031_consumer_group_delete.sql"),
    sql_file!("032_consumer_group_subscription.sql"),
    sql_file!("033_consumer_group_seek.sql"),
    sql_file!("034_dead_letters.sql"),
    sql_file!("035_dead_letter_requeue.sql"),
    sql_file!("036_resource_stats.sql"),
    sql_file!("037_resources.sql"),
    sql_file!("038_queue_delete.sql"),
    sql_file!("039_messages.sql"),
    sql_file!("040_message_erase.sql"),
    sql_file!("041_queue_metrics.sql"),
    sql_file!("042_status.sql"),
    sql_file!("043_traces.sql"),
    sql_file!("044_retention.sql"),
    sql_file!("045_dead_letter_requeue_v2.sql"),
    sql_file!("048_log_render_failed.sql"),
    sql_file!("049_retention_cursor_lock.sql"),
    sql_file!("050_queue_options.sql"),
    sql_file!("051_log_pop_v3.sql"),
    sql_file!("052_log_ack_v2_options.sql"),
    sql_file!("053_log_render_failed_options.sql"),
    sql_file!("054_consumer_group_seek_retry_at.sql"),
    sql_file!("055_push_maintenance.sql"),
    sql_file!("058_segments_inline.sql"),
    sql_file!("060_tenant_leases.sql"),
    sql_file!("061_tenant_limits.sql"),
    sql_file!("062_segments_without_foreign_key.sql"),
    sql_file!("063_leases_named_by_partition.sql"),
    sql_file!("064_txn_keys.sql"),
];

/// Where refinery records applied migrations.
pub const HISTORY_TABLE: &str = "queen.schema_migrations";

/// The advisory lock key of schema installation ("queen" in ASCII), shared with older
/// brokers' per-transaction lock.
const SCHEMA_LOCK_KEY: i64 = 0x71_75_65_65_6e;

/// How long a migration statement may wait for a table lock: long enough for a busy
/// table's short transactions to finish, short enough that traffic queued behind the
/// migration's lock request stalls for seconds, not minutes.
const MIGRATION_LOCK_TIMEOUT: &str = "10s";

/// How long a node waits for another node's migration to finish before giving up.
const SCHEMA_LOCK_WAIT: Duration = Duration::from_secs(300);

/// How often a waiting node tries the advisory lock again.
const SCHEMA_LOCK_POLL: Duration = Duration::from_millis(200);

/// What a start did to the schema.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Every file was recorded already: nothing ran.
    UpToDate,
    /// These files were applied now, in order.
    Applied(Vec<String>),
}

/// Brings the schema up to date: nothing but one read when it is, otherwise the pending
/// migrations under the advisory lock.
pub async fn install(client: &mut Client) -> Result<Outcome, DbError> {
    let started = Instant::now();
    let migrations = migrations()?;
    if pending(client, &migrations).await? == 0 {
        debug!("schema up to date");
        return Ok(Outcome::UpToDate);
    }
    client
        .batch_execute(&format!(
            "SET lock_timeout = '{MIGRATION_LOCK_TIMEOUT}'; SET client_min_messages = warning"
        ))
        .await
        .map_err(|e| DbError::query("schema", e))?;
    lock(client).await?;
    let applied = run(client, &migrations).await;
    let released = unlock(client).await;
    let applied = applied?;
    released?;
    info!(
        applied = applied.len(),
        elapsed_ms = started.elapsed().as_millis() as u64,
        "schema migrated"
    );
    Ok(Outcome::Applied(applied))
}

/// The embedded files as refinery migrations: `001_schema.sql` is `U1__schema`.
pub fn migrations() -> Result<Vec<Migration>, DbError> {
    FILES
        .iter()
        .map(|(file, sql)| {
            let stem = file.trim_end_matches(".sql");
            let (number, name) = stem.split_once('_').unwrap_or((stem, "migration"));
            let version: u32 = number.parse().unwrap_or(0);
            Migration::unapplied(&format!("U{version}__{name}"), sql).map_err(|source| {
                DbError::Schema {
                    step: (*file).to_owned(),
                    source,
                }
            })
        })
        .collect()
}

/// How many embedded migrations are missing from the history, or differ from it.
async fn pending(client: &Client, migrations: &[Migration]) -> Result<usize, DbError> {
    let exists: bool = client
        .query_one("SELECT to_regclass($1) IS NOT NULL", &[&HISTORY_TABLE])
        .await
        .map_err(|e| DbError::query("schema", e))?
        .get(0);
    if !exists {
        return Ok(migrations.len());
    }
    let applied: HashMap<i32, String> = client
        .query(
            &format!("SELECT version, checksum FROM {HISTORY_TABLE}"),
            &[],
        )
        .await
        .map_err(|e| DbError::query("schema", e))?
        .iter()
        .map(|row| (row.get(0), row.get(1)))
        .collect();
    Ok(migrations
        .iter()
        .filter(|m| applied.get(&(m.version() as i32)) != Some(&m.checksum().to_string()))
        .count())
}

/// Takes the session advisory lock, polling so a long migration elsewhere is waited for
/// within [`SCHEMA_LOCK_WAIT`] rather than forever.
async fn lock(client: &Client) -> Result<(), DbError> {
    let deadline = Instant::now() + SCHEMA_LOCK_WAIT;
    loop {
        let got: bool = client
            .query_one("SELECT pg_try_advisory_lock($1)", &[&SCHEMA_LOCK_KEY])
            .await
            .map_err(|e| DbError::query("schema", e))?
            .get(0);
        if got {
            return Ok(());
        }
        if Instant::now() >= deadline {
            return Err(DbError::SchemaLockTimeout);
        }
        tokio::time::sleep(SCHEMA_LOCK_POLL).await;
    }
}

/// Releases the advisory lock and the session settings (the connection goes back to the
/// pool afterwards).
async fn unlock(client: &Client) -> Result<(), DbError> {
    client
        .execute("SELECT pg_advisory_unlock($1)", &[&SCHEMA_LOCK_KEY])
        .await
        .map_err(|e| DbError::query("schema", e))?;
    client
        .batch_execute("RESET lock_timeout; RESET client_min_messages")
        .await
        .map_err(|e| DbError::query("schema", e))
}

/// Runs refinery: the history table, then each pending file in its own transaction.
async fn run(client: &mut Client, migrations: &[Migration]) -> Result<Vec<String>, DbError> {
    client
        .batch_execute("CREATE SCHEMA IF NOT EXISTS queen")
        .await
        .map_err(|e| DbError::query("schema", e))?;
    let mut runner = Runner::new(migrations).set_abort_missing(false);
    runner.set_migration_table_name(HISTORY_TABLE);
    let report = runner
        .run_async(client)
        .await
        .map_err(|source| DbError::Schema {
            step: "migrate".to_owned(),
            source,
        })?;
    Ok(report
        .applied_migrations()
        .iter()
        .map(|m| format!("{:03}_{}.sql", m.version(), m.name()))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_sql_file_is_embedded_once_and_in_order() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/sql");
        let mut on_disk: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .filter(|n| n.ends_with(".sql"))
            .collect();
        on_disk.sort();
        let embedded: Vec<String> = FILES.iter().map(|(f, _)| (*f).to_owned()).collect();
        assert_eq!(embedded, on_disk);
    }

    #[test]
    fn every_file_becomes_a_migration_with_its_own_number() {
        let migrations = migrations().expect("every file name is a migration name");
        let mut versions: Vec<u32> = migrations.iter().map(|m| m.version()).collect();
        assert!(versions.iter().all(|v| *v > 0), "{versions:?}");
        let count = versions.len();
        versions.dedup();
        assert_eq!(versions.len(), count, "two files share a number");
        assert_eq!(migrations[0].name(), "schema");
    }
}
