//! The function files: `sql/functions/`, each re-applied whenever its text changes.
//!
//! Each file is recorded with its checksum and the newest migration of the broker that
//! applied it (its level). During a rolling upgrade both releases run: a node whose
//! migrations are older than the level a file was recorded at leaves that file alone, so
//! the newer release's definitions stay in place when an older node restarts. Two
//! releases with the same newest migration would each apply their own text, so a release
//! that edits a function file also adds a migration (README, "Schema migrations").

use std::collections::HashMap;

use tokio_postgres::Client;

use super::files::{newest, SqlFile, FUNCTIONS};
use super::history::failed;
use super::result_form;
use crate::db::DbError;

/// Where applied function files are recorded.
pub const HISTORY: &str = "queen.schema_functions";

/// Creates the history table when it is missing (under the lock).
pub async fn create_history(client: &Client) -> Result<(), DbError> {
    client
        .batch_execute(&format!(
            "CREATE TABLE IF NOT EXISTS {HISTORY} (
                 file       text        PRIMARY KEY,
                 checksum   text        NOT NULL,
                 level      integer     NOT NULL,
                 applied_at timestamptz NOT NULL DEFAULT now()
             )"
        ))
        .await
        .map_err(failed("history"))
}

/// The embedded function files that are not recorded, or recorded with another text at a
/// level this broker's migrations reach.
pub async fn changed(client: &Client) -> Result<Vec<&'static SqlFile>, DbError> {
    let recorded: HashMap<String, (String, i32)> = client
        .query(&format!("SELECT file, checksum, level FROM {HISTORY}"), &[])
        .await
        .map_err(|e| DbError::query("schema", e))?
        .iter()
        .map(|row| (row.get(0), (row.get(1), row.get(2))))
        .collect();
    let level = newest();
    Ok(FUNCTIONS
        .iter()
        .filter(|f| match recorded.get(f.file) {
            None => true,
            Some((sum, at)) => *sum != f.checksum() && *at <= level,
        })
        .collect())
}

/// Under the lock, after the migrations: applies every changed file and records it, all
/// in one transaction, so a node sees either the old definitions or all the new ones.
///
/// Twice: first with `check_function_bodies` off (as `pg_dump` restores functions), so a
/// SQL-language body may name a function whose file comes later and the files need no
/// order; then again with it on, when everything they name exists, so a body that does
/// not parse (or names what is not there) fails the start here, naming its file, instead
/// of failing its first caller.
///
/// Each file goes one statement per query ([`SqlFile::statements`]).
///
/// `citus`: the database is a Citus coordinator, where a file that replaces a trigger on a
/// distributed or reference table needs `citus.enable_unsafe_triggers` (set for this
/// transaction only).
pub async fn apply(client: &mut Client, citus: bool) -> Result<Vec<String>, DbError> {
    let changed = changed(client).await?;
    if changed.is_empty() {
        return Ok(Vec::new());
    }
    apply_files(client, &changed, citus).await?;
    Ok(changed.iter().map(|f| f.file.to_owned()).collect())
}

/// [`apply`]'s transaction for the given files: both passes, then their records. A file
/// whose function `CREATE OR REPLACE` refuses to change in place is applied again by a
/// drop and a create ([`result_form`]), in a new attempt of the whole transaction.
pub async fn apply_files(
    client: &mut Client,
    files: &[&SqlFile],
    citus: bool,
) -> Result<(), DbError> {
    let mut replaced: Vec<&str> = Vec::new();
    loop {
        let error = match apply_attempt(client, files, citus, &replaced).await {
            Err(error) => error,
            done => return done,
        };
        let refused = result_form::refused_in_place(&error)
            .and_then(|step| files.iter().find(|f| f.file == step))
            .filter(|f| !replaced.contains(&f.file));
        match refused {
            Some(file) => replaced.push(file.file),
            None => return Err(error),
        }
    }
}

/// One attempt of [`apply_files`]'s transaction, the files named in `replaced` dropped
/// before they are created.
async fn apply_attempt(
    client: &mut Client,
    files: &[&SqlFile],
    citus: bool,
    replaced: &[&str],
) -> Result<(), DbError> {
    let level = newest();
    let tx = client.transaction().await.map_err(failed("functions"))?;
    if citus {
        tx.batch_execute("SET LOCAL citus.enable_unsafe_triggers = on")
            .await
            .map_err(failed("functions"))?;
    }
    for check in ["off", "on"] {
        tx.batch_execute(&format!("SET LOCAL check_function_bodies = {check}"))
            .await
            .map_err(failed("functions"))?;
        for file in files {
            if check == "off" && replaced.contains(&file.file) {
                result_form::replace(&tx, file).await?;
                continue;
            }
            // One statement per query: Citus refuses a file's trigger DDL on a distributed
            // table sent with the rest of the file (super::statements).
            for statement in file.statements() {
                tx.batch_execute(statement)
                    .await
                    .map_err(failed(file.file))?;
            }
        }
    }
    for file in files {
        tx.execute(
            &format!(
                "INSERT INTO {HISTORY} (file, checksum, level) VALUES ($1, $2, $3)
                 ON CONFLICT (file) DO UPDATE
                 SET checksum = excluded.checksum, level = excluded.level, applied_at = now()"
            ),
            &[&file.file, &file.checksum(), &level],
        )
        .await
        .map_err(failed(file.file))?;
    }
    tx.commit().await.map_err(failed("functions"))
}
