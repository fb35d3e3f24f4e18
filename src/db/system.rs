//! Cluster-wide switches: the wrappers of `queen.set_maintenance_v1` and
//! `queen.get_maintenance_v1`.

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
