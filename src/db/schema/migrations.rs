//! The versioned migrations: `sql/migrations/`, each applied once, in order, and recorded.

use std::collections::HashMap;

use tokio_postgres::Client;

use super::files::{SqlFile, MIGRATIONS};
use super::history::{exists, failed};
use super::legacy;
use crate::db::DbError;

/// Where applied migrations are recorded.
pub const HISTORY: &str = "queen.schema_versions";

/// Creates the history table when it is missing (under the lock).
pub async fn create_history(client: &Client) -> Result<(), DbError> {
    client
        .batch_execute(&format!(
            "CREATE SCHEMA IF NOT EXISTS queen;
             CREATE TABLE IF NOT EXISTS {HISTORY} (
                 version    integer     PRIMARY KEY,
                 file       text        NOT NULL,
                 checksum   text        NOT NULL,
                 applied_at timestamptz NOT NULL DEFAULT now()
             )"
        ))
        .await
        .map_err(failed("history"))
}

/// The embedded migrations not recorded yet, in order. A recorded one whose checksum
/// differs is an edited migration: an error. Recorded versions this broker does not ship
/// (a newer node's, during a rolling upgrade) are left alone.
pub async fn pending(client: &Client) -> Result<Vec<&'static SqlFile>, DbError> {
    let recorded: HashMap<i32, String> = client
        .query(&format!("SELECT version, checksum FROM {HISTORY}"), &[])
        .await
        .map_err(|e| DbError::query("schema", e))?
        .iter()
        .map(|row| (row.get(0), row.get(1)))
        .collect();
    let mut pending = Vec::new();
    for migration in MIGRATIONS {
        match recorded.get(&migration.version()) {
            None => pending.push(migration),
            Some(sum) if *sum == migration.checksum() => {}
            Some(_) => {
                return Err(DbError::SchemaEdited {
                    file: migration.file.to_owned(),
                })
            }
        }
    }
    Ok(pending)
}

/// Whether the history holds any migration (false when it does not exist yet).
pub async fn any_recorded(client: &Client) -> Result<bool, DbError> {
    if !exists(client, HISTORY).await? {
        return Ok(false);
    }
    Ok(client
        .query_one(&format!("SELECT EXISTS (SELECT 1 FROM {HISTORY})"), &[])
        .await
        .map_err(|e| DbError::query("schema", e))?
        .get(0))
}

/// Records a database that releases before the baseline built as at the baseline, without
/// running it.
pub async fn record_baseline(client: &Client) -> Result<(), DbError> {
    record(client, legacy::baseline()).await
}

/// Under the lock: applies each pending migration in its own transaction. Returns the
/// files applied.
pub async fn apply(client: &mut Client) -> Result<Vec<String>, DbError> {
    let mut applied = Vec::new();
    for migration in pending(client).await? {
        let tx = client.transaction().await.map_err(failed(migration.file))?;
        for statement in migration.statements() {
            tx.batch_execute(statement)
                .await
                .map_err(failed(migration.file))?;
        }
        record(&tx, migration).await?;
        tx.commit().await.map_err(failed(migration.file))?;
        applied.push(migration.file.to_owned());
    }
    Ok(applied)
}

/// Records one migration as applied.
async fn record(
    client: &impl tokio_postgres::GenericClient,
    migration: &SqlFile,
) -> Result<(), DbError> {
    client
        .execute(
            &format!("INSERT INTO {HISTORY} (version, file, checksum) VALUES ($1, $2, $3)"),
            &[&migration.version(), &migration.file, &migration.checksum()],
        )
        .await
        .map(drop)
        .map_err(failed(migration.file))
}
