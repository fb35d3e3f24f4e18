//! Consumer-group registration: the wrapper of `queen.log_register_group_v1`.

use chrono::{DateTime, Utc};

use super::{DbError, PgConn};

const REGISTER: &str = "SELECT queen.log_register_group_v1($1, $2, $3, $4, $5, $6)";

/// Registers a group on a queue with a conflation policy unless it is registered already;
/// returns the stored policy (the request's only when this call registered the group).
pub async fn register_conflation(
    conn: &mut PgConn,
    tenant: &str,
    queue: &str,
    group: &str,
    sub_mode: &str,
    sub_from: Option<DateTime<Utc>>,
    conflation: bool,
) -> Result<bool, DbError> {
    let st = conn.statement("log_register_group_v1", REGISTER).await?;
    let row = conn
        .client()
        .query_one(
            &st,
            &[&tenant, &queue, &group, &sub_mode, &sub_from, &conflation],
        )
        .await
        .map_err(|e| DbError::query("log_register_group_v1", e));
    let row = row.map_err(|e| conn.note(e))?;
    Ok(row.get(0))
}
