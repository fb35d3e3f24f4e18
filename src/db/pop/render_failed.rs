//! The wrapper of `queen.log_render_failed_v1`: giving back the part of a leased claim the
//! broker could not render.

use super::super::{DbError, PgConn};

const RENDER_FAILED: &str = "SELECT queen.log_render_failed_v1($1, $2, $3, $4, $5, $6, $7)";

/// Messages of one claimed partition that could not be rendered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RenderFailure<'a> {
    /// The partition.
    pub partition_id: i64,
    /// The consumer group that claimed them.
    pub group: &'a str,
    /// The lease they were claimed under.
    pub lease: &'a str,
    /// The first unrenderable offset.
    pub from: i64,
    /// The last offset given back with it (its slice's end when the segment is damaged).
    pub to: i64,
    /// No node can read them (a damaged segment), rather than only this node.
    pub damaged: bool,
    /// What went wrong, as a dead letter would show it.
    pub error: &'a str,
}

/// Gives the messages back (`queen.log_render_failed_v1`): `truncated`, `released`,
/// `dead_lettered` or `gone`.
#[tracing::instrument(skip_all, fields(db.system = "postgresql", db.operation = "log_render_failed_v1"))]
pub async fn render_failed(conn: &mut PgConn, f: &RenderFailure<'_>) -> Result<String, DbError> {
    const OP: &str = "log_render_failed_v1";
    let st = conn.statement(OP, RENDER_FAILED).await?;
    let row = conn
        .client()
        .query_one(
            &st,
            &[
                &f.partition_id,
                &f.group,
                &f.lease,
                &f.from,
                &f.to,
                &f.damaged,
                &f.error,
            ],
        )
        .await;
    let row = row.map_err(|e| conn.note(DbError::query(OP, e)))?;
    Ok(row.get(0))
}
