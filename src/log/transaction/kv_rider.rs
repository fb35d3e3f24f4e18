//! The `kv` rider of a bundle: its ops run by `queen.kv_apply_v1` inside the bundle's
//! transaction, and what the function answered read back into results or a lost
//! precondition whose index is moved into the flat space (after the operations' slots).

use serde_json::Value;

use super::{KvPrecondition, TransactionError};
use crate::db::transaction::DataTransaction;
use crate::domain::kv::KvBatch;
use crate::domain::Tenant;

/// How the rider went.
pub(super) enum RiderOutcome {
    /// Every op ran: one result object per op, in order.
    Applied(Vec<Value>),
    /// A `required` op lost; the bundle must roll back.
    Lost(KvPrecondition),
}

/// Runs `batch` for `tenant` in `tx`; `first` is the flat index of its first op.
pub(super) async fn apply(
    tx: &DataTransaction<'_>,
    tenant: &Tenant,
    batch: &KvBatch,
    first: usize,
) -> Result<RiderOutcome, TransactionError> {
    let mut answer = tx.kv(tenant.as_str(), batch).await?;
    if answer.get("ok") == Some(&Value::Bool(false)) {
        let index = answer["failedIndex"].as_u64().unwrap_or(0) as usize;
        return Ok(RiderOutcome::Lost(KvPrecondition {
            failed_index: first + index,
            kv_reason: answer["kvReason"].take(),
            version: answer["version"].take(),
            value: answer["value"].take(),
        }));
    }
    match answer.get_mut("results").map(Value::take) {
        Some(Value::Array(results)) if results.len() == batch.ops.len() => {
            Ok(RiderOutcome::Applied(results))
        }
        _ => Err(TransactionError::KvAnswer),
    }
}
