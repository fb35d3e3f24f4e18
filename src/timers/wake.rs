//! When the fire loop next looks: it sets the deadline it sleeps until, and a schedule
//! made on this node (a route, a transaction's rider) moves it earlier when its timer is
//! due sooner, so a timer scheduled here fires on time without the loop polling for it.
//! A leaf: plain time and a notify.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use tokio::sync::Notify;

/// The fire loop's next look.
#[derive(Debug)]
pub struct TimerWake {
    deadline: Mutex<Instant>,
    notify: Notify,
}

impl Default for TimerWake {
    fn default() -> Self {
        TimerWake {
            deadline: Mutex::new(Instant::now()),
            notify: Notify::new(),
        }
    }
}

impl TimerWake {
    /// A timer committed on this node falls due in `delay_ms` (0 or less: now). Wakes the
    /// loop when that is earlier than its deadline.
    pub fn due_in(&self, delay_ms: i64) {
        // A millisecond past the due time: the claim compares with PostgreSQL's clock.
        let at = Instant::now() + Duration::from_millis(delay_ms.max(0) as u64 + 1);
        let mut deadline = self.deadline.lock().unwrap_or_else(|e| e.into_inner());
        if at < *deadline {
            *deadline = at;
            drop(deadline);
            self.notify.notify_one();
        }
    }

    /// The loop sleeps until `at` (unless told of an earlier timer).
    pub fn sleep_until(&self, at: Instant) {
        *self.deadline.lock().unwrap_or_else(|e| e.into_inner()) = at;
    }

    /// The current deadline.
    pub fn deadline(&self) -> Instant {
        *self.deadline.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Resolves when [`Self::due_in`] moved the deadline earlier.
    pub async fn heard(&self) {
        self.notify.notified().await
    }
}
