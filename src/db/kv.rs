//! The wrapper of `queen.kv_apply_v1` (`sql/functions/kv_apply_v1.sql`): one checked KV
//! batch in, its whole answer out, in one round trip.

use serde_json::Value;
use tracing::instrument;

use crate::db::{DbError, PgConn};
use crate::domain::kv::KvBatch;

/// The statement: the function's jsonb as text, which the route answers as it is.
const APPLY: &str = "SELECT queen.kv_apply_v1($1, $2)::text";

/// The statement as a value, for a caller that reads the answer (a transaction's rider).
pub(super) const APPLY_VALUE: &str = "SELECT queen.kv_apply_v1($1, $2)";

/// Why a KV batch (or a locks call) has no answer, split by what the caller may tell a
/// client that resends.
#[derive(Debug, thiserror::Error)]
pub enum KvApplyError {
    /// Nothing of the batch was applied: the statement was never sent, or the server
    /// refused or rolled it back. Sending the batch again is safe.
    #[error("{0}")]
    NotApplied(DbError),
    /// The statement was sent and the connection failed before an answer came back: the
    /// batch may or may not have committed.
    #[error("{0}")]
    InDoubt(DbError),
    /// The statement ran and its answer could not be read (not the shape this broker
    /// writes it for): the database and the broker disagree.
    #[error("{0}")]
    Unreadable(&'static str),
}

/// Runs the batch for `tenant` and answers the function's jsonb as JSON text:
/// `{"results": [...]}`, or `{"ok": false, "reason": "kv_precondition", ...}` when a
/// `required` op lost (then nothing was applied).
#[instrument(skip_all, fields(db.system = "postgresql", db.operation = "kv_apply_v1"))]
pub async fn apply(
    conn: &mut PgConn,
    tenant: &str,
    batch: &KvBatch,
) -> Result<String, KvApplyError> {
    call_json(conn, "kv_apply_v1", APPLY, tenant, &batch.to_sql_json()).await
}

/// Runs `sql` (a function of `($1 tenant, $2 ops jsonb)` answering text) in one round trip
/// and splits its failures into [`KvApplyError`]'s two kinds. Shared by the engines that
/// take a tenant and a checked ops array: this one and `db::locks`.
pub(crate) async fn call_json(
    conn: &mut PgConn,
    op: &'static str,
    sql: &'static str,
    tenant: &str,
    ops: &Value,
) -> Result<String, KvApplyError> {
    let st = conn
        .statement(op, sql)
        .await
        .map_err(KvApplyError::NotApplied)?;
    match conn.client().query_one(&st, &[&tenant, ops]).await {
        Ok(row) => Ok(row.get(0)),
        Err(source) => Err(failed(conn, op, source)),
    }
}

/// What a failed statement that ran in its own transaction means to a client that
/// resends: nothing applied when the server answered the error, outcome unknown when the
/// connection failed after sending (see `DbError::server_answered`).
pub(crate) fn failed(
    conn: &mut PgConn,
    op: &'static str,
    source: tokio_postgres::Error,
) -> KvApplyError {
    let error = conn.note(DbError::query(op, source));
    if error.server_answered() {
        KvApplyError::NotApplied(error)
    } else {
        KvApplyError::InDoubt(error)
    }
}
