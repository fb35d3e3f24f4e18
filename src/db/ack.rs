//! Acknowledging: the wrapper of `queen.log_ack_v2`.

use tokio_postgres::{GenericClient, Statement};

use super::{DbError, PgConn};
use crate::segment::txn_hash;

const LOG_ACK: &str =
    "SELECT idx, success, error, lease_released, dlq, queue_name, partition_name, pending_after
     FROM queen.log_ack_v2($1, $2, $3, $4, $5, $6, $7, $8)";

/// One acknowledgement for a message of the partition.
#[derive(Debug, Clone)]
pub struct AckItem {
    /// The message's transaction id.
    pub transaction_id: String,
    /// Its offset when the broker knows it; otherwise SQL finds it by transaction id.
    pub offset: Option<i64>,
    /// `completed`, `failed`, `retry` or `dlq` (SQL refuses others per item).
    pub status: String,
    /// Failure text of a nack.
    pub error: Option<String>,
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

/// Acknowledges items of one (partition, group) under `lease` (empty: the live lease).
/// Verdicts come back in item order.
pub async fn ack_partition(
    conn: &mut PgConn,
    partition_id: i64,
    group: &str,
    lease: &str,
    items: &[AckItem],
) -> Result<Vec<AckVerdict>, DbError> {
    let st = statement(conn).await?;
    let verdicts = ack_in(conn.client(), &st, partition_id, group, lease, items).await;
    verdicts.map_err(|e| conn.note(e))
}

/// Prepares (once per connection) the statement calling `queen.log_ack_v2`, for [`ack_in`].
pub async fn statement(conn: &mut PgConn) -> Result<Statement, DbError> {
    conn.statement("log_ack_v2", LOG_ACK).await
}

/// Calls `queen.log_ack_v2` on `client` (a plain connection, or a transaction the caller
/// owns) with the statement from [`statement`]. Same contract as [`ack_partition`]; the
/// caller notes errors on its connection.
#[tracing::instrument(skip_all, fields(db.system = "postgresql", db.operation = "log_ack_v2"))]
pub async fn ack_in(
    client: &impl GenericClient,
    st: &Statement,
    partition_id: i64,
    group: &str,
    lease: &str,
    items: &[AckItem],
) -> Result<Vec<AckVerdict>, DbError> {
    let txn_ids: Vec<&str> = items.iter().map(|i| i.transaction_id.as_str()).collect();
    let hashes: Vec<i64> = txn_ids.iter().map(|t| txn_hash(t)).collect();
    let offsets: Vec<Option<i64>> = items.iter().map(|i| i.offset).collect();
    let statuses: Vec<&str> = items.iter().map(|i| i.status.as_str()).collect();
    let errors: Vec<Option<&str>> = items.iter().map(|i| i.error.as_deref()).collect();
    let lease = (!lease.is_empty()).then_some(lease);
    let rows = client
        .query(
            st,
            &[
                &partition_id,
                &group,
                &lease,
                &txn_ids,
                &hashes,
                &offsets,
                &statuses,
                &errors,
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
