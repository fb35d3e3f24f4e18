//! Acknowledging: the wrapper of `queen.log_ack_v2` (`queen.log_ack_v3` on the Citus
//! layout), tried after the one-statement acks that settle the common case:
//! [`leased_span`] when this node served the pop, else [`whole_lease`].

use tokio_postgres::{GenericClient, Statement};

use super::{DbError, PgConn};
use crate::segment::{key_of_hash, txn_hash};

/// The start of both one-statement acks: the `UPDATE` that releases a whole lease, moving
/// the cursor to its end and clearing it. One text, so the two cannot drift apart.
macro_rules! release_whole_lease {
    () => {
        "
UPDATE queen.log_consumers c SET
    committed = c.batch_end,
    worker_id = NULL, lease_expires_at = NULL, lease_acquired_at = NULL,
    batch_end = NULL, acked_ahead = '{}',
    total_consumed = c.total_consumed + (c.batch_end - c.committed),
    last_consumed_at = now()
"
    };
}

pub mod leased_span;
pub mod whole_lease;

pub use leased_span::LeasedSpan;

/// The ack statement, its tenant check reading `$directory` (a table with `id` and
/// `queue_id` per partition). `$9`: the commit need not wait for the WAL flush (see
/// [`AckDurability`]); `$10`: the caller's tenant. The `EXISTS` is a one-time filter
/// PostgreSQL evaluates before the function scan (two primary-key probes, once per
/// statement): for another tenant's partition the function never runs, no row comes back
/// (every item "Message not found") and nothing changes.
macro_rules! log_ack_checked_in {
    ($directory:literal) => {
        concat!(
            "SELECT idx, success, error, lease_released, dlq, queue_name, partition_name, pending_after
     FROM queen.log_ack_v2($1, $2, $3, $4, $5, $6, $7, $8)
     CROSS JOIN (SELECT set_config('synchronous_commit',
                                   CASE WHEN $9 THEN 'off'
                                        ELSE current_setting('synchronous_commit') END,
                                   true)) AS durability
     WHERE EXISTS (SELECT 1 FROM ",
            $directory,
            " p JOIN queen.queues q ON q.id = p.queue_id
                   WHERE p.id = $1 AND q.tenant = $10)"
        )
    };
}

/// The ack on PostgreSQL: the tenant's check reads `log_partitions` (every partition has
/// its row there, also one a node of the previous release created).
const LOG_ACK: &str = log_ack_checked_in!("queen.log_partitions");

/// [`LOG_ACK`] on the Citus layout: a bare call of `queen.log_ack_v3`, which takes the
/// tenant (`$10`) and the durability choice (`$9`) as arguments and checks and sets them
/// itself. Citus delegates only a bare `SELECT .. FROM f(..)` to the worker holding the
/// partition's shard; beside a `set_config` and a tenant check the coordinator ran
/// `log_ack_v2` itself, each of its statements a round trip to the worker
/// (docs/scale-out.md, "The model"). Delegated, the durability choice also reaches the
/// worker's commit, which the coordinator's `set_config` did not.
const LOG_ACK_DISTRIBUTED: &str =
    "SELECT idx, success, error, lease_released, dlq, queue_name, partition_name, pending_after
     FROM queen.log_ack_v3($1, $2, $3, $4, $5, $6, $7, $8, $10, $9)";

/// Whether the commit of an ack waits for its WAL to reach the disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AckDurability {
    /// It waits (`synchronous_commit` as the server has it): acks inside a transaction
    /// bundle, whose pushes must be durable when answered, and every ack with
    /// `QUEEN_ACK_SYNC_COMMIT` on.
    Flushed,
    /// Its autocommit transaction does not wait for the flush: a PostgreSQL crash right
    /// after it can only make the acked messages come again, as an expired lease does.
    Relaxed,
}

/// One acknowledgement for a message of the partition.
#[derive(Debug, Clone)]
pub struct AckItem<'a> {
    /// The message's transaction id.
    pub transaction_id: &'a str,
    /// Its offset when the broker knows it; otherwise SQL finds it by transaction id.
    pub offset: Option<i64>,
    /// `completed`, `failed`, `retry` or `dlq` (SQL refuses others per item).
    pub status: &'a str,
    /// Failure text of a nack.
    pub error: Option<&'a str>,
}

/// What happened to one item.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AckVerdict {
    /// Applied (or a harmless no-op).
    pub success: bool,
    /// Why it was refused.
    pub error: Option<String>,
    /// The partition's lease was released by this call.
    pub lease_released: bool,
    /// The message went to the dead-letter queue.
    pub dlq: bool,
    /// The partition's queue (known when the lease was live).
    pub queue: Option<String>,
    /// The partition's name (known when the lease was live).
    pub partition: Option<String>,
    /// Messages left in the partition beyond the group's cursor after this call.
    pub pending_after: i64,
}

/// Which (partition, group, lease) an ack settles, for which tenant, and how durably.
#[derive(Debug, Clone, Copy)]
pub struct AckTarget<'a> {
    /// The caller's tenant: a partition of another tenant is never touched.
    pub tenant: &'a str,
    /// The messages' partition.
    pub partition_id: i64,
    /// The consumer group.
    pub group: &'a str,
    /// The lease the messages were delivered under (empty: the partition's live lease).
    pub lease: &'a str,
    /// Whether the commit waits for the WAL flush.
    pub durability: AckDurability,
}

/// How an ack of one (partition, lease) was settled.
#[derive(Debug, Clone)]
pub struct AckAnswer {
    /// One verdict per item, in item order.
    pub verdicts: Vec<AckVerdict>,
    /// Settled by a one-statement whole-lease ack (else by `queen.log_ack_v2`).
    pub whole_lease: bool,
    /// Settled from the serving node's record of the lease ([`leased_span`]).
    pub known_lease: bool,
}

/// The ack statements of one connection, prepared once (see [`statements`]).
#[derive(Debug, Clone)]
pub struct AckStatements {
    /// The known-lease and whole-lease statements; None on the Citus layout (see
    /// [`statements`]).
    lease: Option<LeaseStatements>,
    items: Statement,
}

/// The one-statement acks of [`AckStatements`].
#[derive(Debug, Clone)]
struct LeaseStatements {
    known_lease: Statement,
    whole_lease: Statement,
}

/// Acknowledges items of one (partition, group) under `target.lease` (empty: the live
/// lease); `known` is what this node's claim leased there under that lease, when it served
/// the pop. Verdicts come back in item order.
pub async fn ack_partition(
    conn: &mut PgConn,
    target: &AckTarget<'_>,
    known: Option<&LeasedSpan>,
    items: &[AckItem<'_>],
) -> Result<AckAnswer, DbError> {
    let st = statements(conn).await?;
    let answer = ack_known(conn.client(), &st, target, known, items).await;
    answer.map_err(|e| conn.note(e))
}

/// Prepares (once per connection) the statements of [`ack_in`]. On the Citus layout
/// ([`PgConn::distributed`]) only `log_ack_v3`, which Citus runs on the partition's
/// worker: it refuses the one-statement acks (an `UPDATE` of the distributed cursors
/// joined with reference tables, with `set_config` in its `RETURNING`).
pub async fn statements(conn: &mut PgConn) -> Result<AckStatements, DbError> {
    let (lease, items) = if conn.distributed() {
        let items = conn.statement("log_ack_v3", LOG_ACK_DISTRIBUTED).await?;
        (None, items)
    } else {
        let lease = LeaseStatements {
            known_lease: leased_span::statement(conn).await?,
            whole_lease: whole_lease::statement(conn).await?,
        };
        (Some(lease), conn.statement("log_ack_v2", LOG_ACK).await?)
    };
    Ok(AckStatements { lease, items })
}

/// Acknowledges on `client` (a plain connection, or a transaction the caller owns): the
/// whole-lease statement when every item completes its message, and `queen.log_ack_v2`
/// when that statement does not apply. Same contract as [`ack_partition`]; the caller
/// notes errors on its connection.
pub async fn ack_in(
    client: &impl GenericClient,
    st: &AckStatements,
    target: &AckTarget<'_>,
    items: &[AckItem<'_>],
) -> Result<AckAnswer, DbError> {
    ack_known(client, st, target, None, items).await
}

/// [`ack_in`], first trying the known-lease statement when `known` (this node's record of
/// the lease) holds exactly the items' keys.
async fn ack_known(
    client: &impl GenericClient,
    st: &AckStatements,
    target: &AckTarget<'_>,
    known: Option<&LeasedSpan>,
    items: &[AckItem<'_>],
) -> Result<AckAnswer, DbError> {
    let AckTarget {
        tenant,
        partition_id,
        group,
        lease,
        durability,
    } = *target;
    let relaxed = durability == AckDurability::Relaxed;
    let txn_ids: Vec<&str> = items.iter().map(|i| i.transaction_id).collect();
    // `log_ack_v2` takes the 64-bit hashes (brokers of the previous version call it too);
    // the lease statements compare keys.
    let hashes: Vec<i64> = txn_ids.iter().map(|t| txn_hash(t)).collect();
    let keys: Vec<i64> = hashes.iter().map(|&h| key_of_hash(h)).collect();
    let statuses: Vec<&str> = items.iter().map(|i| i.status).collect();
    let lease = (!lease.is_empty()).then_some(lease);
    let eligible = whole_lease::eligible(&statuses, &keys);
    if let (Some(sorted), Some(lease_st)) = (eligible, &st.lease) {
        if let (Some(span), Some(lease)) = (known, lease) {
            if span.sorted_keys == sorted {
                let released = leased_span::try_known_lease(
                    client,
                    &lease_st.known_lease,
                    partition_id,
                    group,
                    lease,
                    span,
                    relaxed,
                )
                .await?;
                if let Some(pending_after) = released {
                    return Ok(released_whole(
                        items.len(),
                        span.queue.clone(),
                        span.partition.clone(),
                        pending_after,
                        true,
                    ));
                }
            }
        }
        let applied = whole_lease::try_whole_lease(
            client,
            &lease_st.whole_lease,
            &whole_lease::WholeLease {
                tenant,
                partition_id,
                group,
                lease,
                sorted_keys: &sorted,
                relaxed,
            },
        )
        .await?;
        if let Some(done) = applied {
            return Ok(released_whole(
                items.len(),
                done.queue,
                done.partition,
                done.pending_after,
                false,
            ));
        }
    }
    let keys = ItemKeys {
        txn_ids: &txn_ids,
        hashes: &hashes,
        statuses: &statuses,
    };
    let verdicts = log_ack_v2(client, &st.items, target, items, &keys).await?;
    Ok(AckAnswer {
        verdicts,
        whole_lease: false,
        known_lease: false,
    })
}

/// The answer of an ack that completed its whole lease: every item applied, the lease
/// released.
fn released_whole(
    items: usize,
    queue: String,
    partition: String,
    pending_after: i64,
    known_lease: bool,
) -> AckAnswer {
    let verdict = AckVerdict {
        success: true,
        error: None,
        lease_released: true,
        dlq: false,
        queue: Some(queue),
        partition: Some(partition),
        pending_after,
    };
    AckAnswer {
        verdicts: vec![verdict; items],
        whole_lease: true,
        known_lease,
    }
}

/// The items' columns both statements read, computed once.
struct ItemKeys<'a> {
    txn_ids: &'a [&'a str],
    hashes: &'a [i64],
    statuses: &'a [&'a str],
}

/// Calls `queen.log_ack_v2` (`queen.log_ack_v3` on the Citus layout, the statement `st`
/// holds) with the items and their hashes.
#[tracing::instrument(skip_all, fields(db.system = "postgresql", db.operation = "log_ack_v2"))]
async fn log_ack_v2(
    client: &impl GenericClient,
    st: &Statement,
    target: &AckTarget<'_>,
    items: &[AckItem<'_>],
    keys: &ItemKeys<'_>,
) -> Result<Vec<AckVerdict>, DbError> {
    let lease = (!target.lease.is_empty()).then_some(target.lease);
    let relaxed = target.durability == AckDurability::Relaxed;
    let offsets: Vec<Option<i64>> = items.iter().map(|i| i.offset).collect();
    let errors: Vec<Option<&str>> = items.iter().map(|i| i.error).collect();
    let rows = client
        .query(
            st,
            &[
                &target.partition_id,
                &target.group,
                &lease,
                &keys.txn_ids,
                &keys.hashes,
                &offsets,
                &keys.statuses,
                &errors,
                &relaxed,
                &target.tenant,
            ],
        )
        .await
        .map_err(|e| DbError::query("log_ack_v2", e))?;
    let mut verdicts = vec![
        AckVerdict {
            success: false,
            error: Some("Message not found".to_owned()),
            lease_released: false,
            dlq: false,
            queue: None,
            partition: None,
            pending_after: 0,
        };
        items.len()
    ];
    for row in rows {
        let idx: i32 = row.get(0);
        if let Some(slot) = usize::try_from(idx - 1)
            .ok()
            .and_then(|i| verdicts.get_mut(i))
        {
            *slot = AckVerdict {
                success: row.get(1),
                error: row.get(2),
                lease_released: row.get(3),
                dlq: row.get(4),
                queue: row.get(5),
                partition: row.get(6),
                pending_after: row.get::<_, Option<i64>>(7).unwrap_or(0),
            };
        }
    }
    Ok(verdicts)
}
