//! The wrapper of `queen.kv_apply_v1` (`sql/functions/kv_apply_v1.sql`): one checked KV
//! batch in, its whole answer out, in one round trip.

use tracing::instrument;

use crate::db::{DbError, PgConn};
use crate::domain::kv::KvBatch;

/// The statement: the function's jsonb as text, which the route answers as it is.
const APPLY: &str = "SELECT queen.kv_apply_v1($1, $2)::text";

/// The statement as a value, for a caller that reads the answer (a transaction's rider).
pub(super) const APPLY_VALUE: &str = "SELECT queen.kv_apply_v1($1, $2)";

/// Why a batch has no answer, split by what the caller may tell a client that resends.
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
    const OP: &str = "kv_apply_v1";
    let st = conn
        .statement(OP, APPLY)
        .await
        .map_err(KvApplyError::NotApplied)?;
    let ops = batch.to_sql_json();
    let row = conn.client().query_one(&st, &[&tenant, &ops]).await;
    match row {
        Ok(row) => Ok(row.get(0)),
        Err(source) => {
            // The statement runs in its own transaction: see `DbError::server_answered`.
            let error = conn.note(DbError::query(OP, source));
            Err(if error.server_answered() {
                KvApplyError::NotApplied(error)
            } else {
                KvApplyError::InDoubt(error)
            })
        }
    }
}
