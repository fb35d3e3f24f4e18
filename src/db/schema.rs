//! The schema installer: applies the embedded `sql/` files in order at start-up.
//!
//! Every file is re-runnable (create-or-replace, if-not-exists), so all of them run on every
//! start, in one transaction, under a transaction-scoped advisory lock so that several nodes
//! starting together apply them one at a time. `queen.schema_files` records what ran, with a
//! checksum, for operators.

use tokio_postgres::Client;
use tracing::info;

use super::DbError;

/// The advisory lock key of schema installation ("queen" in ASCII).
const SCHEMA_LOCK_KEY: i64 = 0x71_75_65_65_6e;

/// The `sql/` files, in the order they are applied.
pub const FILES: &[(&str, &str)] = &[
    ("001_schema.sql", include_str!("../../sql/001_schema.sql")),
    (
        "002_log_push.sql",
        include_str!("../../sql/002_log_push.sql"),
    ),
    ("003_log_pop.sql", include_str!("../../sql/003_log_pop.sql")),
    (
        "004_log_pop_specific.sql",
        include_str!("../../sql/004_log_pop_specific.sql"),
    ),
    (
        "005_log_pop_wildcard.sql",
        include_str!("../../sql/005_log_pop_wildcard.sql"),
    ),
    (
        "006_log_pop_discover.sql",
        include_str!("../../sql/006_log_pop_discover.sql"),
    ),
    (
        "007_log_has_pending.sql",
        include_str!("../../sql/007_log_has_pending.sql"),
    ),
    ("008_log_ack.sql", include_str!("../../sql/008_log_ack.sql")),
    (
        "009_log_lease_extend.sql",
        include_str!("../../sql/009_log_lease_extend.sql"),
    ),
    (
        "010_configure_queue.sql",
        include_str!("../../sql/010_configure_queue.sql"),
    ),
    (
        "011_log_pop_list.sql",
        include_str!("../../sql/011_log_pop_list.sql"),
    ),
    (
        "012_log_pending_partitions.sql",
        include_str!("../../sql/012_log_pending_partitions.sql"),
    ),
    (
        "013_system_state.sql",
        include_str!("../../sql/013_system_state.sql"),
    ),
    (
        "014_group_conflation.sql",
        include_str!("../../sql/014_group_conflation.sql"),
    ),
    (
        "015_txn_hash.sql",
        include_str!("../../sql/015_txn_hash.sql"),
    ),
    (
        "016_log_push_v2.sql",
        include_str!("../../sql/016_log_push_v2.sql"),
    ),
    (
        "017_log_ack_v2.sql",
        include_str!("../../sql/017_log_ack_v2.sql"),
    ),
    (
        "018_log_pop_v2.sql",
        include_str!("../../sql/018_log_pop_v2.sql"),
    ),
    (
        "020_lease_require.sql",
        include_str!("../../sql/020_lease_require.sql"),
    ),
    (
        "030_consumer_group_lags.sql",
        include_str!("../../sql/030_consumer_group_lags.sql"),
    ),
    (
        "031_consumer_group_delete.sql",
        include_str!("../../sql/031_consumer_group_delete.sql"),
    ),
    (
        "032_consumer_group_subscription.sql",
        include_str!("../../sql/032_consumer_group_subscription.sql"),
    ),
    (
        "033_consumer_group_seek.sql",
        include_str!("../../sql/033_consumer_group_seek.sql"),
    ),
    (
        "034_dead_letters.sql",
        include_str!("../../sql/034_dead_letters.sql"),
    ),
    (
        "035_dead_letter_requeue.sql",
        include_str!("../../sql/035_dead_letter_requeue.sql"),
    ),
    (
        "036_resource_stats.sql",
        include_str!("../../sql/036_resource_stats.sql"),
    ),
    (
        "037_resources.sql",
        include_str!("../../sql/037_resources.sql"),
    ),
    (
        "038_queue_delete.sql",
        include_str!("../../sql/038_queue_delete.sql"),
    ),
    (
        "039_messages.sql",
        include_str!("../../sql/039_messages.sql"),
    ),
    (
        "040_message_erase.sql",
        include_str!("../../sql/040_message_erase.sql"),
    ),
    (
        "041_queue_metrics.sql",
        include_str!("../../sql/041_queue_metrics.sql"),
    ),
    ("042_status.sql", include_str!("../../sql/042_status.sql")),
    ("043_traces.sql", include_str!("../../sql/043_traces.sql")),
];

/// Applies every schema file, idempotently, under the advisory lock.
pub async fn install(client: &mut Client) -> Result<(), DbError> {
    let started = std::time::Instant::now();
    let tx = client
        .transaction()
        .await
        .map_err(|e| DbError::query("schema", e))?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&SCHEMA_LOCK_KEY])
        .await
        .map_err(|e| DbError::query("schema", e))?;
    tx.batch_execute(
        "CREATE SCHEMA IF NOT EXISTS queen;
         CREATE TABLE IF NOT EXISTS queen.schema_files (
             file text PRIMARY KEY, checksum text NOT NULL, applied_at timestamptz NOT NULL)",
    )
    .await
    .map_err(|e| DbError::query("schema", e))?;
    for (file, sql) in FILES {
        tx.batch_execute(sql)
            .await
            .map_err(|source| DbError::Schema { file, source })?;
        tx.execute(
            "INSERT INTO queen.schema_files (file, checksum, applied_at) VALUES ($1, md5($2), now())
             ON CONFLICT (file) DO UPDATE SET checksum = EXCLUDED.checksum, applied_at = now()",
            &[file, sql],
        )
        .await
        .map_err(|e| DbError::query("schema", e))?;
    }
    tx.commit().await.map_err(|e| DbError::query("schema", e))?;
    info!(
        files = FILES.len(),
        elapsed_ms = started.elapsed().as_millis() as u64,
        "schema applied"
    );
    Ok(())
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
}
