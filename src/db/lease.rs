//! Lease renewal: the wrapper of `queen.log_lease_extend_v2`.

use chrono::{DateTime, Utc};

use super::{DbError, PgConn};

const LEASE_EXTEND: &str = "SELECT renewed, expires_at FROM queen.log_lease_extend_v2($1, $2, $3)";

/// Pushes every live partition lease of `tenant` under `lease` forward; `seconds` `None`
/// uses each queue's lease time. Returns how many were renewed and the latest new expiry.
#[tracing::instrument(skip_all, fields(db.system = "postgresql", db.operation = "log_lease_extend_v2"))]
pub async fn extend(
    conn: &mut PgConn,
    tenant: &str,
    lease: &str,
    seconds: Option<i32>,
) -> Result<(i32, Option<DateTime<Utc>>), DbError> {
    let st = conn.statement("log_lease_extend_v2", LEASE_EXTEND).await?;
    let row = conn
        .client()
        .query_one(&st, &[&tenant, &lease, &seconds])
        .await
        .map_err(|e| DbError::query("log_lease_extend_v2", e));
    let row = row.map_err(|e| conn.note(e))?;
    Ok((row.get(0), row.get(1)))
}
