//! A data transaction a caller owns: pushes, acks, KV ops and lease fences applied
//! together, all or nothing, with the wrapper of `queen.lease_require_v2`.
//!
//! It only runs statements; what the rows mean, and what to tell the actors after the
//! commit, is decided by the callers in `log`.

use std::sync::Mutex;

use tokio_postgres::{Statement, Transaction};

use super::ack::{self, AckAnswer, AckDurability, AckItem, AckStatements, AckTarget};
use super::push::{self, AppendOutcome, AppendStatements, PartitionAppend};
use super::timers::ClaimedTimer;
use super::{DbError, PgConn};
use crate::domain::kv::KvBatch;
use crate::domain::timers::TimerBatch;

/// Work that must see only committed data: run by [`DataTransaction::commit`] after the
/// commit succeeded, dropped unrun by a rollback (or a drop).
type AfterCommit = Box<dyn FnOnce() + Send>;

const LEASE_REQUIRE: &str = "SELECT lease_id, live FROM queen.lease_require_v2($1, $2)";

/// An open transaction on a pooled connection, with the statements of the data path ready.
/// Dropped without [`commit`](Self::commit), it rolls back (tokio-postgres sends the
/// `ROLLBACK` before the connection's next statement).
pub struct DataTransaction<'c> {
    tx: Transaction<'c>,
    /// What to do once the commit succeeded (see [`Self::after_commit`]).
    after_commit: Mutex<Vec<AfterCommit>>,
    push: AppendStatements,
    segment: Statement,
    ack: AckStatements,
    lease: Statement,
    kv: Statement,
    timers: Statement,
    claim: Statement,
}

impl<'c> DataTransaction<'c> {
    /// Prepares the statements (cached per connection) and opens the transaction.
    pub async fn begin(conn: &'c mut PgConn) -> Result<Self, DbError> {
        let push = push::statements(conn).await?;
        let segment = push::segment_statement(conn).await?;
        let ack = ack::statements(conn).await?;
        let lease = conn.statement("lease_require_v2", LEASE_REQUIRE).await?;
        let kv = conn
            .statement("kv_apply_v1", super::kv::APPLY_VALUE)
            .await?;
        let timers = conn
            .statement("timers_apply_v1", super::timers::APPLY_VALUE)
            .await?;
        let claim = conn
            .statement("timers_claim_v1", super::timers::CLAIM)
            .await?;
        let distributed = conn.distributed();
        let tx = conn
            .client()
            .transaction()
            .await
            .map_err(|e| DbError::query("begin", e))?;
        if distributed {
            // On the Citus layout a bundle's lease check reads the cursors of every shard
            // at once, and Citus then refuses a later write of a reference table in the
            // same transaction (a push creating its queue or partition: "cannot modify
            // table ... because there was a parallel operation on a distributed table").
            // One connection per worker for the whole transaction, as retention does.
            tx.batch_execute("SET LOCAL citus.multi_shard_modify_mode TO 'sequential'")
                .await
                .map_err(|e| DbError::query("begin", e))?;
        }
        Ok(Self {
            tx,
            after_commit: Mutex::new(Vec::new()),
            push,
            segment,
            ack,
            lease,
            kv,
            timers,
            claim,
        })
    }

    /// Appends one partition's segments (see [`push::append_in`]).
    pub async fn append(&self, append: &PartitionAppend<'_>) -> Result<AppendOutcome, DbError> {
        push::append_in(&self.tx, &self.push, append).await
    }

    /// Reads the stored segment that holds `offset` (see [`push::read_segment`]).
    pub async fn read_segment(
        &self,
        partition_id: i64,
        offset: i64,
    ) -> Result<Option<push::StoredSegment>, DbError> {
        push::read_segment(&self.tx, &self.segment, partition_id, offset).await
    }

    /// Acknowledges items of one (partition, group) under `lease` (empty: the live lease;
    /// see [`ack::ack_in`]); verdicts in item order.
    pub async fn ack(
        &self,
        tenant: &str,
        partition_id: i64,
        group: &str,
        lease: &str,
        items: &[AckItem<'_>],
    ) -> Result<AckAnswer, DbError> {
        // The bundle's pushes must be durable when answered: its acks wait with them.
        let target = AckTarget {
            tenant,
            partition_id,
            group,
            lease,
            durability: AckDurability::Flushed,
        };
        ack::ack_in(&self.tx, &self.ack, &target, items).await
    }

    /// Calls `queen.lease_require_v2`: locks every partition of `tenant` held under
    /// `leases` until this transaction ends and answers the leases that are not live (none
    /// of the tenant's partitions held, or expired).
    pub async fn require_leases(
        &self,
        tenant: &str,
        leases: &[String],
    ) -> Result<Vec<String>, DbError> {
        if leases.is_empty() {
            return Ok(Vec::new());
        }
        let rows = self
            .tx
            .query(&self.lease, &[&tenant, &leases])
            .await
            .map_err(|e| DbError::query("lease_require_v2", e))?;
        Ok(rows
            .iter()
            .filter(|row| !row.get::<_, bool>(1))
            .map(|row| row.get(0))
            .collect())
    }

    /// Runs a KV batch with `queen.kv_apply_v1` inside this transaction and answers the
    /// function's object: `{"results": [...]}`, or `{"ok": false, "reason":
    /// "kv_precondition", ...}` when a `required` op lost (the function then undid the
    /// batch's own writes; the caller rolls back the rest).
    pub async fn kv(&self, tenant: &str, batch: &KvBatch) -> Result<serde_json::Value, DbError> {
        let row = self
            .tx
            .query_one(&self.kv, &[&tenant, &batch.to_sql_json()])
            .await
            .map_err(|e| DbError::query("kv_apply_v1", e))?;
        Ok(row.get(0))
    }

    /// Runs a timers batch with `queen.timers_apply_v1` inside this transaction and
    /// answers the function's object, `{"results": [...]}`.
    pub async fn timers(
        &self,
        tenant: &str,
        batch: &TimerBatch,
    ) -> Result<serde_json::Value, DbError> {
        let row = self
            .tx
            .query_one(&self.timers, &[&tenant, &batch.to_sql_json()])
            .await
            .map_err(|e| DbError::query("timers_apply_v1", e))?;
        Ok(row.get(0))
    }

    /// Claims (deletes) up to `limit` due timers with `queen.timers_claim_v1`: they are
    /// gone when this transaction commits and back when it rolls back.
    pub async fn claim_timers(&self, limit: i32) -> Result<Vec<ClaimedTimer>, DbError> {
        let rows = self
            .tx
            .query(&self.claim, &[&limit])
            .await
            .map_err(|e| DbError::query("timers_claim_v1", e))?;
        Ok(rows.iter().map(ClaimedTimer::from_row).collect())
    }

    /// The open transaction itself, for the `db` modules whose statements run inside a
    /// caller's transaction (`db::streams`).
    pub(super) fn client(&self) -> &Transaction<'c> {
        &self.tx
    }

    /// Runs `work` when, and only when, this transaction commits: for what a caller learned
    /// inside it that others may rely on only once it is durable (a dedup window learning
    /// segments this transaction wrote itself, `log/push/append.rs`). In call order.
    pub fn after_commit(&self, work: impl FnOnce() + Send + 'static) {
        self.after_commit
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(Box::new(work));
    }

    /// Commits everything done in the transaction, then runs the work left for after it.
    pub async fn commit(self) -> Result<(), DbError> {
        let after =
            std::mem::take(&mut *self.after_commit.lock().unwrap_or_else(|e| e.into_inner()));
        self.tx
            .commit()
            .await
            .map_err(|e| DbError::query("commit", e))?;
        for work in after {
            work();
        }
        Ok(())
    }

    /// Rolls everything back and waits for the server to confirm, so the connection goes
    /// back to the pool outside any transaction.
    pub async fn rollback(self) -> Result<(), DbError> {
        self.tx
            .rollback()
            .await
            .map_err(|e| DbError::query("rollback", e))
    }
}
