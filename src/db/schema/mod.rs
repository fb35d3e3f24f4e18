//! The schema installer: versioned migrations for tables, one repeatable file per function.
//!
//! Two kinds of `sql/` file, both embedded in the binary ([`files`]):
//!
//! - `sql/migrations/NNN_*.sql` hold tables, indexes, backfills and drops. Each is applied
//!   once, in the order of its number, in its own transaction, and recorded in
//!   `queen.schema_versions` with its checksum ([`migrations`]). A shipped migration is
//!   never edited: a changed checksum stops the start with an error naming the file.
//! - `sql/functions/<name>.sql` hold one `CREATE OR REPLACE FUNCTION` each: the function's
//!   one live definition. After the migrations, every file whose checksum differs from the
//!   one recorded in `queen.schema_functions` is applied again, all in one transaction
//!   ([`functions`]); Flyway's repeatable migrations are the model.
//!
//! A start that finds every file recorded reads the two history tables and nothing else:
//! no lock, no DDL, so no lock on a hot table and no "already exists" notices. Otherwise it
//! takes a cluster-wide advisory lock (nodes starting together apply one at a time; the key
//! is the one older brokers took, so a rolling upgrade with them serialises too), reads the
//! history again, and applies what is still missing with a `lock_timeout`, so a migration
//! that needs a hot table gives up instead of queueing live traffic behind it. Databases of
//! releases from before the baseline are handled in [`legacy`].
//!
//! On a Citus coordinator a third step follows the function files: the distributed layout
//! ([`citus`]), which a start also checks (in Citus's catalog) before calling the schema
//! up to date.

pub mod citus;
pub mod files;
pub mod functions;
mod history;
pub mod legacy;
pub mod migrations;
mod result_form;
pub mod statements;

use std::time::{Duration, Instant};

use tokio_postgres::Client;
use tracing::{debug, info};

pub use files::{SqlFile, FUNCTIONS, MIGRATIONS};

use crate::db::DbError;
use history::exists;
use legacy::Found;

/// The advisory lock key of schema installation ("queen" in ASCII), shared with older
/// brokers' lock.
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
    /// These files were applied now, in order: migrations, then function files.
    Applied(Vec<String>),
}

/// Brings the schema up to date: nothing but a few reads when it is, otherwise the pending
/// files (and, on Citus, layout steps) under the advisory lock. `citus` is `QUEEN_CITUS`
/// (None: the `citus` extension decides).
pub async fn install(client: &mut Client, citus: Option<bool>) -> Result<Outcome, DbError> {
    let started = Instant::now();
    let citus = citus::wanted(client, citus).await?;
    // The layout is read only once the files are recorded: before, the schema may not exist.
    if is_up_to_date(client).await? && (!citus || citus::pending(client).await?.is_empty()) {
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
    let applied = apply(client, citus).await;
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

/// True when every embedded migration and function file is recorded as it is.
async fn is_up_to_date(client: &Client) -> Result<bool, DbError> {
    if !exists(client, migrations::HISTORY).await? || !exists(client, functions::HISTORY).await? {
        return Ok(false);
    }
    Ok(migrations::pending(client).await?.is_empty()
        && functions::changed(client).await?.is_empty())
}

/// Under the lock: what a database without a history of its own holds (before any DDL,
/// so a refused database is left as it was), the history tables, the migrations still
/// missing, then the function files still changed (another node may have applied some
/// while this one waited), then on Citus the layout steps still missing.
async fn apply(client: &mut Client, citus: bool) -> Result<Vec<String>, DbError> {
    let found = if migrations::any_recorded(client).await? {
        None
    } else {
        Some(legacy::inspect(client).await?)
    };
    migrations::create_history(client).await?;
    functions::create_history(client).await?;
    if found == Some(Found::AtBaseline) {
        migrations::record_baseline(client).await?;
    }
    let mut applied = migrations::apply(client).await?;
    applied.extend(functions::apply(client, citus).await?);
    if citus {
        applied.extend(citus::apply(client).await?);
    }
    Ok(applied)
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
