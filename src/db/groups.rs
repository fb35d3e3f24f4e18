//! Consumer-group registration and liveness: the wrappers of
//! `queen.log_register_group_at_v1` (with `queen.queue_ensure_v1`) and
//! `queen.consumer_group_seen_v1`.

use chrono::{DateTime, Utc};

use super::{DbError, PgConn};

const REGISTER: &str =
    "SELECT queen.log_register_group_at_v1(queen.queue_ensure_v1($1, $2), $3, $4, $5, $6)";

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
    let st = conn.statement("log_register_group_at_v1", REGISTER).await?;
    let row = conn
        .client()
        .query_one(
            &st,
            &[&tenant, &queue, &group, &sub_mode, &sub_from, &conflation],
        )
        .await
        .map_err(|e| DbError::query("log_register_group_at_v1", e));
    let row = row.map_err(|e| conn.note(e))?;
    Ok(row.get(0))
}

const SEEN: &str = "SELECT queen.consumer_group_seen_v1($1, $2, $3)";

/// Records that a group is waiting for messages of a queue now (its `last_seen_at`), which
/// the idle-group sweep counts as activity (`queen.consumer_group_seen_v1`).
pub async fn seen(
    conn: &mut PgConn,
    tenant: &str,
    queue: &str,
    group: &str,
) -> Result<(), DbError> {
    let st = conn.statement("consumer_group_seen_v1", SEEN).await?;
    let done = conn
        .client()
        .execute(&st, &[&tenant, &queue, &group])
        .await
        .map_err(|e| DbError::query("consumer_group_seen_v1", e));
    done.map_err(|e| conn.note(e))?;
    Ok(())
}
