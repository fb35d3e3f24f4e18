//! This node's belief that the database is away, so pushes during an outage go straight to
//! the spool instead of each waiting out the pool timeout (`QUEEN_POOL_TIMEOUT_MS`, 5 s by
//! default) first. A push or a replay attempt that meets an outage starts the belief for
//! [`HOLD`]; the replay's next successful commit ends it at once. A belief that outlives the
//! outage costs nothing but a spooled push, which the replay then stores at once.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// How long an outage seen once is believed: longer than the replay's longest pause plus
/// a default pool timeout, so during a long outage the replay's failing attempts keep it up.
pub const HOLD: Duration = Duration::from_secs(10);

/// The belief.
#[derive(Debug)]
pub struct Away {
    started: Instant,
    /// Milliseconds after `started` until which the database is believed away; 0: not.
    until_ms: AtomicU64,
}

impl Default for Away {
    fn default() -> Self {
        Away {
            started: Instant::now(),
            until_ms: AtomicU64::new(0),
        }
    }
}

impl Away {
    /// An outage was met now.
    pub fn seen(&self) {
        let until = (self.started.elapsed() + HOLD).as_millis() as u64;
        self.until_ms.fetch_max(until, Ordering::Relaxed);
    }

    /// The database answered: the belief ends.
    pub fn back(&self) {
        self.until_ms.store(0, Ordering::Relaxed);
    }

    /// True while the database is believed away. One atomic load when it is not.
    pub fn is_away(&self) -> bool {
        match self.until_ms.load(Ordering::Relaxed) {
            0 => false,
            until => (self.started.elapsed().as_millis() as u64) < until,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_outage_is_believed_until_the_database_answers() {
        let away = Away::default();
        assert!(!away.is_away());
        away.seen();
        assert!(away.is_away());
        away.back();
        assert!(!away.is_away());
    }

    #[test]
    fn the_belief_ends_by_itself_after_its_hold() {
        let away = Away::default();
        away.until_ms.store(1, Ordering::Relaxed);
        std::thread::sleep(Duration::from_millis(5));
        assert!(!away.is_away());
    }
}
