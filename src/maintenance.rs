//! Maintenance mode for pops, shared through the database: every node re-reads the switch
//! on a short interval, so all nodes agree within about a second of a change.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use tracing::{info, warn};

use crate::broker::Broker;
use crate::db::system::maintenance;

/// How often each node re-reads the switch.
pub const REFRESH_EVERY: Duration = Duration::from_millis(500);

/// Keeps `broker.maintenance` in step with the database until the task is aborted.
pub fn spawn_refresher(broker: Arc<Broker>) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(REFRESH_EVERY);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            let result = match broker.db.background_conn().await {
                Ok(mut conn) => maintenance(&mut conn).await,
                Err(e) => Err(e),
            };
            match result {
                Ok(on) => {
                    let was = broker.maintenance.swap(on, Ordering::Relaxed);
                    if was != on {
                        info!(maintenance = on, "pop maintenance mode changed");
                    }
                }
                Err(error) => warn!(error = %error, "maintenance switch could not be read"),
            }
        }
    })
}
