//! The database error type, and what each kind of failure means to a caller.

use tokio_postgres::error::SqlState;

/// A database operation that failed.
#[derive(Debug, thiserror::Error)]
pub enum DbError {
    /// No pooled connection became free within the pool timeout.
    #[error("connection pool exhausted")]
    PoolExhausted,
    /// A new connection could not be opened.
    #[error("could not connect to the database")]
    Connect(#[source] tokio_postgres::Error),
    /// No connection became free within the pool timeout while the database refused new
    /// connections: an outage (a restart, a failover), not a busy pool.
    #[error("database unavailable")]
    Unavailable,
    /// The server cancelled a statement that ran past the statement timeout.
    #[error("statement timed out in {op}")]
    StatementTimeout {
        /// The SQL function or operation.
        op: &'static str,
        /// The server's error.
        #[source]
        source: tokio_postgres::Error,
    },
    /// Any other failure of a statement.
    #[error("query failed in {op}")]
    Query {
        /// The SQL function or operation.
        op: &'static str,
        /// The server's (or the connection's) error.
        #[source]
        source: tokio_postgres::Error,
    },
    /// The schema could not be installed.
    #[error("schema migration failed at {step}")]
    Schema {
        /// The `sql/` file, or the step of the installer.
        step: String,
        /// The server's error.
        #[source]
        source: tokio_postgres::Error,
    },
    /// A migration this broker ships was applied with other content: a shipped migration
    /// was edited, which the installer refuses rather than guess which one is right.
    #[error("migration {file} differs from the one applied to this database")]
    SchemaEdited {
        /// The `sql/migrations/` file.
        file: String,
    },
    /// A function file changed the columns its function answers. Replacing it in place
    /// would break the callers of the previous release during a rolling upgrade, so the
    /// change must be a new `_vN` function (README, "Rolling upgrades").
    #[error("{file} changes its function's result columns from {before} to {after}: a new _vN is needed")]
    SchemaResultChanged {
        /// The `sql/functions/` file.
        file: String,
        /// The columns the database's definition answered.
        before: String,
        /// The columns the file's definition answers.
        after: String,
    },
    /// The database was built by a release older than this one's baseline, which it
    /// cannot upgrade directly (README, "Schema migrations").
    #[error("database schema too old to upgrade: {found}")]
    SchemaTooOld {
        /// What the installer found instead of the baseline.
        found: String,
    },
    /// Another node held the schema lock for longer than a start waits.
    #[error("schema lock not acquired in time")]
    SchemaLockTimeout,
    /// `QUEEN_CITUS=true` asked for the Citus layout on a database without the `citus`
    /// extension: refused rather than run unsharded when the operator meant sharded.
    #[error("QUEEN_CITUS=true but the database has no citus extension (CREATE EXTENSION citus)")]
    CitusMissing,
}

/// A table's or constraint's name as the schema declares it: on the Citus layout an error
/// raised on a shard names the shard's copy, the declared name plus `_<shard id>`
/// (`log_partition_names_queue_id_fkey_102040`); a name without such a suffix is returned
/// as it is, so plain PostgreSQL's names pass unchanged.
fn unsharded(name: &str) -> &str {
    match name.rsplit_once('_') {
        Some((declared, shard))
            if !declared.is_empty()
                && !shard.is_empty()
                && shard.bytes().all(|b| b.is_ascii_digit()) =>
        {
            declared
        }
        _ => name,
    }
}

impl DbError {
    /// Wraps a statement error, recognising the statement timeout by its SQLSTATE.
    pub fn query(op: &'static str, source: tokio_postgres::Error) -> Self {
        if source.code() == Some(&SqlState::QUERY_CANCELED) {
            DbError::StatementTimeout { op, source }
        } else {
            DbError::Query { op, source }
        }
    }

    /// False when a statement was sent and the connection failed before any answer (a
    /// closed socket): a commit, or a statement running in its own transaction, may then
    /// have applied. An error the server sent means it rolled the statement back; every
    /// other failure happened before anything was sent.
    pub fn server_answered(&self) -> bool {
        match self {
            DbError::Query { source, .. } => source.as_db_error().is_some(),
            _ => true,
        }
    }

    /// True for failures that may succeed when the whole transaction is tried again
    /// (serialisation failure, deadlock), decided by SQLSTATE, never by message text.
    pub fn is_retryable(&self) -> bool {
        matches!(
            self.sql_state(),
            Some(s) if *s == SqlState::T_R_SERIALIZATION_FAILURE || *s == SqlState::T_R_DEADLOCK_DETECTED
        )
    }

    /// True for a failure that the same request, sent again a moment later, gets past,
    /// and after which nothing is applied: the server answered with an error, so the
    /// failed statement's transaction was rolled back. These are the retryable SQLSTATEs
    /// ([`Self::is_retryable`]: a deadlock, among others the first pops of a group racing
    /// on the Citus layout's reference tables) and, on the Citus layout, a delegated call
    /// that reached a worker whose shard a rebalance had just moved away
    /// ([`shard_moved_away`]). Answered 503 with `Retry-After`, never spooled: the
    /// database is there.
    pub fn is_transient(&self) -> bool {
        self.is_retryable() || self.is_shard_moved_away()
    }

    /// True when, on the Citus layout, a statement ran on a worker that no longer holds
    /// its shard (see [`shard_moved_away`]); the same call sent again is routed to the
    /// shard's new worker.
    pub fn is_shard_moved_away(&self) -> bool {
        match self {
            DbError::Query { source, .. } => source
                .as_db_error()
                .is_some_and(|e| shard_moved_away(e.code(), e.message())),
            _ => false,
        }
    }

    /// True when a write stored nothing because a queue was deleted under it: a deadlock
    /// with the delete (which locks the queue's partitions in id order, a combined push in
    /// name order), the queue row gone when the write created a partition (or its
    /// directory row) in it, or the partition gone between `log_push_v3`'s insert of it
    /// and its read back (the segment then has no partition id). Tried again, the write
    /// creates queue and partition afresh.
    ///
    /// On the Citus layout the names are the shards' (see [`unsharded`]), and a foreign
    /// key violation a worker raised arrives without its constraint's name (Citus passes
    /// on the SQLSTATE and the texts only); PostgreSQL always names it, so a nameless one
    /// is a shard's, and on the push path only a queue or partition deleted under the
    /// write can break a key.
    pub fn lost_to_a_queue_delete(&self) -> bool {
        let gone = match self {
            DbError::Query { source, .. } => source.as_db_error().is_some_and(|e| {
                let code = e.code();
                (*code == SqlState::FOREIGN_KEY_VIOLATION
                    && matches!(
                        e.constraint().map(unsharded),
                        Some("log_partitions_queue_id_fkey")
                            | Some("log_partition_names_queue_id_fkey")
                            | Some("log_partitions_id_fkey")
                            | None
                    ))
                    || (*code == SqlState::NOT_NULL_VIOLATION
                        && e.table().map(unsharded) == Some("log_segments")
                        && e.column() == Some("partition_id"))
            }),
            _ => false,
        };
        gone || self.is_retryable()
    }

    /// True when the connection itself is lost or unusable (as opposed to a bad statement):
    /// a closed socket, an I/O failure, or the server ending the session (SQLSTATE class 08,
    /// or 57P01-57P03: an administrator or crash shutdown, a server still starting).
    pub fn is_connection_problem(&self) -> bool {
        match self {
            DbError::PoolExhausted | DbError::Connect(_) | DbError::Unavailable => true,
            DbError::Query { source, .. } => {
                source.is_closed() || source.code().map_or(true, server_ended_session)
            }
            DbError::StatementTimeout { .. }
            | DbError::Schema { .. }
            | DbError::SchemaEdited { .. }
            | DbError::SchemaResultChanged { .. }
            | DbError::SchemaTooOld { .. }
            | DbError::SchemaLockTimeout
            | DbError::CitusMissing => false,
        }
    }

    /// True for an outage of the database (a lost or refused connection, the server
    /// shutting down or starting), as opposed to a pool busy with load: what a client
    /// should retry later, and what the push spool stands in for.
    pub fn is_outage(&self) -> bool {
        !matches!(self, DbError::PoolExhausted) && self.is_connection_problem()
    }

    /// True when PostgreSQL refused a value as data (SQLSTATE class 22: a NUL in text, a
    /// number out of range): the same statement with the same values fails again.
    pub fn is_data_exception(&self) -> bool {
        matches!(self, DbError::Query { .. })
            && self.sql_state().is_some_and(|s| s.code().starts_with("22"))
    }

    /// The database's text when a tenant limit refused a creation (SQLSTATE `QLIMT`, raised
    /// by `sql/functions/tenant_limit_v1.sql`): the client asked for more than its tenant may have,
    /// and nothing was stored.
    pub fn tenant_limit(&self) -> Option<String> {
        let DbError::Query { source, .. } = self else {
            return None;
        };
        let error = source.as_db_error()?;
        (error.code().code() == TENANT_LIMIT).then(|| error.message().to_owned())
    }

    /// True when the connection that ran the statement must not be reused.
    pub fn poisons_connection(&self) -> bool {
        matches!(self, DbError::StatementTimeout { .. }) || self.is_connection_problem()
    }

    fn sql_state(&self) -> Option<&SqlState> {
        match self {
            DbError::Query { source, .. } | DbError::StatementTimeout { source, .. } => {
                source.code()
            }
            DbError::Schema { .. }
            | DbError::SchemaEdited { .. }
            | DbError::SchemaResultChanged { .. }
            | DbError::SchemaTooOld { .. }
            | DbError::SchemaLockTimeout
            | DbError::CitusMissing => None,
            DbError::Connect(source) => source.code(),
            DbError::PoolExhausted | DbError::Unavailable => None,
        }
    }
}

/// Whether a server error means that a Citus rebalance moved the statement's shard away
/// from the worker it ran on: the coordinator had routed a delegated call
/// (`log_push_at_v1`, `log_pop_v3`, `log_ack_v2`) to the shard's old worker, and by the
/// time the function's statement ran there, the worker's metadata placed the shard on
/// another node, so the statement would have had to be distributed from inside a shard's
/// query, which Citus refuses. Seen during `citus_rebalance_start` under load
/// (tests/broker/citus_grow.rs; docs/scale-out.md, "Adding a worker under load"). Citus
/// raises it as SQLSTATE XX000 (internal error), which it uses for many unrelated errors
/// too, so the text decides here, and only for these known messages.
pub fn shard_moved_away(state: &SqlState, message: &str) -> bool {
    *state == SqlState::INTERNAL_ERROR
        && SHARD_MOVED_AWAY
            .iter()
            .any(|known| message.starts_with(known))
}

/// Citus's texts (13.2) for a statement that met its shard gone from the worker it ran on.
const SHARD_MOVED_AWAY: &[&str] = &["cannot execute a distributed query from a query on a shard"];

/// The SQLSTATE of a creation over a tenant limit (`sql/functions/tenant_limit_v1.sql`).
pub const TENANT_LIMIT: &str = "QLIMT";

/// SQLSTATEs with which the server ends a session rather than refusing a statement.
fn server_ended_session(state: &SqlState) -> bool {
    state.code().starts_with("08")
        || *state == SqlState::ADMIN_SHUTDOWN
        || *state == SqlState::CRASH_SHUTDOWN
        || *state == SqlState::CANNOT_CONNECT_NOW
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_delegated_call_on_a_worker_its_shard_left_is_a_moved_shard() {
        assert!(shard_moved_away(
            &SqlState::INTERNAL_ERROR,
            "cannot execute a distributed query from a query on a shard"
        ));
    }

    #[test]
    fn other_internal_errors_and_the_same_text_under_another_state_are_not() {
        assert!(!shard_moved_away(
            &SqlState::INTERNAL_ERROR,
            "could not create distributed plan"
        ));
        assert!(!shard_moved_away(
            &SqlState::FEATURE_NOT_SUPPORTED,
            "cannot execute a distributed query from a query on a shard"
        ));
    }

    #[test]
    fn errors_without_a_server_answer_are_not_transient() {
        assert!(!DbError::PoolExhausted.is_transient());
        assert!(!DbError::Unavailable.is_transient());
        assert!(!DbError::SchemaLockTimeout.is_transient());
    }

    #[test]
    fn shard_names_lose_their_shard_id_and_declared_names_stay() {
        assert_eq!(
            unsharded("log_partition_names_queue_id_fkey_102040"),
            "log_partition_names_queue_id_fkey"
        );
        assert_eq!(unsharded("log_segments"), "log_segments");
    }
}
