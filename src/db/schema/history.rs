//! What the installer's steps share: whether a table exists, and how a failed statement
//! of a file becomes an error naming it.

use tokio_postgres::Client;

use crate::db::DbError;

/// Whether a table exists.
pub async fn exists(client: &Client, table: &str) -> Result<bool, DbError> {
    Ok(client
        .query_one("SELECT to_regclass($1) IS NOT NULL", &[&table])
        .await
        .map_err(|e| DbError::query("schema", e))?
        .get(0))
}

/// Wraps a failed statement of one file (or installer step) in an error naming it.
pub fn failed(file: &str) -> impl Fn(tokio_postgres::Error) -> DbError + '_ {
    move |source| DbError::Schema {
        step: file.to_owned(),
        source,
    }
}
