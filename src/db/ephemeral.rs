//! The wrappers of the ephemeral queues' declaration functions
//! (`sql/functions/ephemeral_*_v1.sql`). Declarations are all of an ephemeral queue that
//! PostgreSQL holds; its contents live in `crate::ephemeral`.

use serde_json::Value;

use super::{DbError, PgConn};

/// Stores or replaces a declaration (`queen.ephemeral_declare_v1`); `options` is the
/// checked options object.
pub async fn declare(
    conn: &mut PgConn,
    tenant: &str,
    queue: &str,
    options: &Value,
) -> Result<(), DbError> {
    const OP: &str = "ephemeral_declare_v1";
    let st = conn
        .statement(OP, "SELECT queen.ephemeral_declare_v1($1, $2, $3)")
        .await?;
    let row = conn
        .client()
        .execute(&st, &[&tenant, &queue, options])
        .await;
    row.map_err(|e| conn.note(DbError::query(OP, e)))?;
    Ok(())
}

/// One declaration's options object, `None` when the queue is not declared
/// (`queen.ephemeral_declaration_v1`).
pub async fn declaration(
    conn: &mut PgConn,
    tenant: &str,
    queue: &str,
) -> Result<Option<Value>, DbError> {
    const OP: &str = "ephemeral_declaration_v1";
    let st = conn
        .statement(OP, "SELECT queen.ephemeral_declaration_v1($1, $2)")
        .await?;
    let row = conn.client().query_one(&st, &[&tenant, &queue]).await;
    Ok(row.map_err(|e| conn.note(DbError::query(OP, e)))?.get(0))
}

/// Every declaration of a tenant, `[{queue, options}]` (`queen.ephemeral_declarations_v1`).
pub async fn declarations(conn: &mut PgConn, tenant: &str) -> Result<Value, DbError> {
    const OP: &str = "ephemeral_declarations_v1";
    let st = conn
        .statement(OP, "SELECT queen.ephemeral_declarations_v1($1)")
        .await?;
    let row = conn.client().query_one(&st, &[&tenant]).await;
    Ok(row.map_err(|e| conn.note(DbError::query(OP, e)))?.get(0))
}

/// Removes a declaration; true when there was one (`queen.ephemeral_forget_v1`).
pub async fn forget(conn: &mut PgConn, tenant: &str, queue: &str) -> Result<bool, DbError> {
    const OP: &str = "ephemeral_forget_v1";
    let st = conn
        .statement(OP, "SELECT queen.ephemeral_forget_v1($1, $2)")
        .await?;
    let row = conn.client().query_one(&st, &[&tenant, &queue]).await;
    Ok(row.map_err(|e| conn.note(DbError::query(OP, e)))?.get(0))
}
