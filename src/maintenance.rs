//! Maintenance modes, shared through the database: pop maintenance (every pop answers 204)
//! and push maintenance (every push goes to the node's spool). Every node re-reads both
//! switches on a short interval, so all nodes agree within about a second of a change;
//! push maintenance turning off wakes this node's spool replay.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use tracing::{info, warn};

use crate::broker::Broker;
use crate::db::system::maintenance_switches;

/// How often each node re-reads the switch.
pub const REFRESH_EVERY: Duration = Duration::from_millis(500);

/// Keeps `broker.maintenance` in step with the database until the task is aborted.
pub fn spawn_refresher(broker: Arc<Broker>) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(REFRESH_EVERY);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            let changes_before = *broker
                .maintenance_changes
                .lock()
                .expect("maintenance lock is never poisoned");
            let result = match broker.db.background_conn().await {
                Ok(mut conn) => maintenance_switches(&mut conn).await,
                Err(e) => Err(e),
            };
            // Held while applying, so no change lands between the check and the stores.
            let changes = broker
                .maintenance_changes
                .lock()
                .expect("maintenance lock is never poisoned");
            match result {
                // A change made here while this read ran: the read may predate it, and the
                // next tick reads what it stored.
                Ok(_) if *changes != changes_before => {}
                Ok((pop, push)) => {
                    let was = broker.maintenance.swap(pop, Ordering::Relaxed);
                    if was != pop {
                        info!(maintenance = pop, "pop maintenance mode changed");
                    }
                    if broker.set_push_maintenance(push) != push {
                        info!(push_maintenance = push, "push maintenance mode changed");
                    }
                }
                Err(error) => warn!(error = %error, "maintenance switch could not be read"),
            }
        }
    })
}
