//! Consumer-group policies stored at the group's first registration: today, conflation.

use chrono::{DateTime, Utc};

use crate::broker::Broker;
use crate::db::{groups, DbError};
use crate::domain::{ConsumerGroup, QueueName, Tenant};
use crate::log::pop::SubscriptionMode;

/// Registers `group` on `queue` as conflating unless it is registered already, and returns
/// the group's stored policy (which wins over the request, per the contract).
pub async fn conflation_policy(
    broker: &Broker,
    tenant: &Tenant,
    queue: &QueueName,
    group: &ConsumerGroup,
    mode: SubscriptionMode,
    from: Option<DateTime<Utc>>,
) -> Result<bool, DbError> {
    let _permit = broker.permit().await?;
    let mut conn = broker.db.conn().await?;
    let mode = match mode {
        SubscriptionMode::All => "all",
        SubscriptionMode::New => "new",
    };
    groups::register_conflation(
        &mut conn,
        tenant.as_str(),
        queue.as_str(),
        group.as_str(),
        mode,
        from,
        true,
    )
    .await
}
