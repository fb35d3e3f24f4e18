//! Cluster-wide switches: the wrappers of `queen.set_maintenance_v1`,
//! `queen.get_maintenance_v1`, `queen.set_push_maintenance_v1` and
//! `queen.get_maintenance_v2`.

use super::{DbError, PgConn};

/// Turns pop maintenance mode on or off for every node; returns the stored value.
pub async fn set_maintenance(conn: &mut PgConn, pop: bool) -> Result<bool, DbError> {
    let st = conn
        .statement("set_maintenance_v1", "SELECT queen.set_maintenance_v1($1)")
        .await?;
    let row = conn.client().query_one(&st, &[&pop]).await;
    Ok(row
        .map_err(|e| conn.note(DbError::query("set_maintenance_v1", e)))?
        .get(0))
}

/// The stored pop maintenance switch.
pub async fn maintenance(conn: &mut PgConn) -> Result<bool, DbError> {
    let st = conn
        .statement("get_maintenance_v1", "SELECT queen.get_maintenance_v1()")
        .await?;
    let row = conn.client().query_one(&st, &[]).await;
    Ok(row
        .map_err(|e| conn.note(DbError::query("get_maintenance_v1", e)))?
        .get(0))
}

/// Turns push maintenance mode on or off for every node (`queen.set_push_maintenance_v1`);
/// returns the stored value.
pub async fn set_push_maintenance(conn: &mut PgConn, push: bool) -> Result<bool, DbError> {
    let st = conn
        .statement(
            "set_push_maintenance_v1",
            "SELECT queen.set_push_maintenance_v1($1)",
        )
        .await?;
    let row = conn.client().query_one(&st, &[&push]).await;
    Ok(row
        .map_err(|e| conn.note(DbError::query("set_push_maintenance_v1", e)))?
        .get(0))
}

/// Both stored switches, `(pop, push)` (`queen.get_maintenance_v2`).
pub async fn maintenance_switches(conn: &mut PgConn) -> Result<(bool, bool), DbError> {
    let st = conn
        .statement(
            "get_maintenance_v2",
            "SELECT pop, push FROM queen.get_maintenance_v2()",
        )
        .await?;
    let row = conn.client().query_one(&st, &[]).await;
    let row = row.map_err(|e| conn.note(DbError::query("get_maintenance_v2", e)))?;
    Ok((row.get(0), row.get(1)))
}
