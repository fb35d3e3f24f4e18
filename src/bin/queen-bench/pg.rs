//! The tool's own PostgreSQL needs: connections, the settings worth printing beside the
//! figures, the WAL position (bytes written per phase), checkpoints between phases, and the
//! postmaster's process id (PostgreSQL CPU is read from /proc under it).

use std::str::FromStr;

use anyhow::Context;
use tokio_postgres::{Client, NoTls};

/// Settings that decide what a write costs; printed with every result.
pub const REPORTED_SETTINGS: &[&str] = &[
    "server_version",
    "shared_buffers",
    "fsync",
    "synchronous_commit",
    "wal_level",
    "full_page_writes",
    "wal_compression",
    "wal_buffers",
    "wal_writer_flush_after",
    "max_wal_size",
    "checkpoint_timeout",
    "max_connections",
    "work_mem",
    "autovacuum",
];

/// Parses a libpq key=value string or a postgresql:// URL.
pub fn parse_config(raw: &str) -> anyhow::Result<tokio_postgres::Config> {
    tokio_postgres::Config::from_str(raw)
        .with_context(|| format!("{raw:?} is not a PostgreSQL connection string"))
}

/// One connection, driven on its own task.
pub async fn connect(config: &tokio_postgres::Config) -> anyhow::Result<Client> {
    let (client, connection) = config
        .connect(NoTls)
        .await
        .context("connecting to PostgreSQL")?;
    tokio::spawn(async move {
        if let Err(e) = connection.await {
            eprintln!("queen-bench: PostgreSQL connection ended: {e}");
        }
    });
    Ok(client)
}

/// (name, value) of each reported setting.
pub async fn settings(client: &Client) -> anyhow::Result<Vec<(String, String)>> {
    let rows = client
        .query(
            "SELECT name, current_setting(name) FROM unnest($1::text[]) AS name",
            &[&REPORTED_SETTINGS],
        )
        .await
        .context("reading PostgreSQL settings")?;
    Ok(rows.iter().map(|r| (r.get(0), r.get(1))).collect())
}

/// The current WAL insert position, in bytes.
pub async fn wal_position(client: &Client) -> anyhow::Result<i64> {
    let row = client
        .query_one(
            "SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::bigint",
            &[],
        )
        .await
        .context("reading the WAL position")?;
    Ok(row.get(0))
}

/// Forces a checkpoint so no phase inherits the previous one's dirty pages (skipped,
/// silently, when the role may not).
pub async fn checkpoint(client: &Client) {
    let _ = client.batch_execute("CHECKPOINT").await;
}

/// The postmaster's pid: the parent of this connection's backend (same machine only).
pub async fn postmaster_pid(client: &Client) -> anyhow::Result<Option<i32>> {
    let row = client.query_one("SELECT pg_backend_pid()", &[]).await?;
    let backend: i32 = row.get(0);
    Ok(crate::cpu::parent_of(backend))
}

/// Bytes of every stored segment blob of the broker (its compressed messages).
pub async fn stored_blob_bytes(client: &Client) -> anyhow::Result<i64> {
    let row = client
        .query_one(
            "SELECT coalesce(sum(octet_length(blob)), 0)::bigint FROM queen.log_segments",
            &[],
        )
        .await
        .context("reading the stored segment bytes")?;
    Ok(row.get(0))
}

#[cfg(test)]
mod tests {
    use super::REPORTED_SETTINGS;

    /// The report says which settings the broker sets; each must be among those printed.
    #[test]
    fn every_setting_the_embedded_server_starts_with_is_printed() {
        for (name, _) in queen::app::EMBEDDED_SERVER_SETTINGS {
            assert!(REPORTED_SETTINGS.contains(&name), "{name} is not printed");
        }
    }
}
