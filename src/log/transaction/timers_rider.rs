//! The `timers` rider of a bundle: its ops run by `queen.timers_apply_v1` inside the
//! bundle's transaction (committed or rolled back with the pushes, acks and `kv` ops), and
//! what the function answered read back into one result object per op. A `too_late` or
//! `absent` is a verdict in its result, not a failure of the bundle.

use serde_json::Value;

use super::TransactionError;
use crate::db::transaction::DataTransaction;
use crate::domain::timers::TimerBatch;
use crate::domain::Tenant;

/// Runs `batch` for `tenant` in `tx`: one result per op, in order.
pub(super) async fn apply(
    tx: &DataTransaction<'_>,
    tenant: &Tenant,
    batch: &TimerBatch,
) -> Result<Vec<Value>, TransactionError> {
    let mut answer = tx.timers(tenant.as_str(), batch).await?;
    match answer.get_mut("results").map(Value::take) {
        Some(Value::Array(results)) if results.len() == batch.ops.len() => Ok(results),
        _ => Err(TransactionError::TimersAnswer),
    }
}
