//! A claimed delivery, and for an auto-ack pop the transaction that holds its cursor
//! advance until the caller has rendered the answer.

use crate::db::pop::ClaimedSlice;
use crate::db::{Conn, DbError};

/// What a pop claimed: segment slices under one lease.
#[derive(Debug)]
pub struct Delivery {
    /// The lease shared by every claimed partition; empty with auto-ack.
    pub lease_id: String,
    /// The claimed slices, in delivery order.
    pub slices: Vec<ClaimedSlice>,
}

/// A delivery, and for an auto-ack pop the transaction holding its cursor advance until
/// the answer is rendered: [`Claim::commit`] after rendering, [`Claim::abandon`] when the
/// rendering failed. Dropped without either, the transaction is rolled back (its
/// connection is discarded, see `PgConn::begin`).
pub struct Claim<'a> {
    /// What was claimed.
    pub delivery: Delivery,
    /// The auto-ack transaction, still open.
    pub(super) open: Option<Conn<'a>>,
}

impl Claim<'_> {
    /// Commits an auto-ack claim (nothing to do for a leased one, committed already).
    pub async fn commit(mut self) -> Result<Delivery, DbError> {
        if let Some(conn) = self.open.as_mut() {
            conn.commit().await?;
        }
        Ok(self.delivery)
    }

    /// Rolls an auto-ack claim back: every cursor stays where it was. For a leased claim
    /// it does nothing (see [`super::unrenderable::give_back`]).
    pub async fn abandon(mut self) -> Result<Delivery, DbError> {
        if let Some(conn) = self.open.as_mut() {
            conn.rollback().await?;
        }
        Ok(self.delivery)
    }
}
