//! The wrapper of `queen.locks_apply_v1` (`sql/functions/locks_apply_v1.sql`): one checked
//! locks call in, its whole answer out, in one round trip.

use tracing::instrument;

use crate::db::kv::{call_json, KvApplyError};
use crate::db::PgConn;
use crate::domain::locks::LockBatch;

/// Runs the call for `tenant` and answers the function's jsonb as JSON text:
/// `{"results": [...]}`. Failures split as the KV store's do ([`KvApplyError`]): nothing
/// applied, or a connection lost after sending with the outcome unknown.
#[instrument(skip_all, fields(db.system = "postgresql", db.operation = "locks_apply_v1"))]
pub async fn apply(
    conn: &mut PgConn,
    tenant: &str,
    batch: &LockBatch,
) -> Result<String, KvApplyError> {
    let sql = "SELECT queen.locks_apply_v1($1, $2)::text";
    call_json(conn, "locks_apply_v1", sql, tenant, &batch.to_sql_json()).await
}
