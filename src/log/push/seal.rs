//! The sealing of a push's payloads for encrypted queues, before its segments are built.

use std::collections::HashMap;

use uuid::Uuid;

use super::error::PushError;
use crate::broker::Broker;
use crate::domain::{PushItem, QueueName, Tenant};

/// The sealed payload of every item bound for an encrypted queue (`None` for the others),
/// in item order.
pub async fn seal_payloads(
    broker: &Broker,
    tenant: &Tenant,
    items: &[PushItem],
    message_ids: &[Uuid],
) -> Result<Vec<Option<Vec<u8>>>, PushError> {
    let mut encrypted: HashMap<&QueueName, bool> = HashMap::new();
    for item in items {
        if !encrypted.contains_key(&item.queue) {
            let on = broker
                .encrypted_queues
                .is_encrypted(&broker.db, tenant, &item.queue)
                .await?;
            encrypted.insert(&item.queue, on);
        }
    }
    if !encrypted.values().any(|on| *on) {
        return Ok(vec![None; items.len()]);
    }
    let key = broker.config.push.payload_key.as_ref();
    items
        .iter()
        .zip(message_ids)
        .map(|(item, id)| match (encrypted[&item.queue], key) {
            (false, _) => Ok(None),
            (true, Some(key)) => Ok(Some(key.seal(id, &item.payload))),
            (true, None) => Err(PushError::NoKey {
                queue: item.queue.as_str().to_owned(),
            }),
        })
        .collect()
}
