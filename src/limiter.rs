//! The Vegas-style adaptive concurrency limit around database work.
//!
//! A storm of requests queues here, in the broker, instead of inside PostgreSQL. The limit
//! follows TCP Vegas: with `min_rtt` the fastest recent round trip and `rtt` the latest, the
//! estimated queue is `limit × (1 − min_rtt / rtt)`; below `alpha` the limit grows, above
//! `beta` it shrinks, always within `[min, max]` (max = the pool size). A permit is held only
//! for real work: parked long-polls and empty in-memory answers never take one.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::Notify;

/// Samples after which the fastest round trip is forgotten, so the baseline can move up
/// when the database gets slower for good (a new, larger working set, say).
const MIN_RTT_RESET_SAMPLES: u32 = 500;

/// The limiter, shared by every request.
#[derive(Debug)]
pub struct Limiter {
    state: Mutex<State>,
    released: Notify,
    acquired_total: AtomicU64,
}

#[derive(Debug)]
struct State {
    limit: f64,
    min: f64,
    max: f64,
    in_flight: usize,
    min_rtt: Option<Duration>,
    samples: u32,
}

/// The limiter's state, for `/metrics`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LimiterSnapshot {
    /// Current concurrency limit.
    pub limit: usize,
    /// Permits held right now.
    pub in_flight: usize,
    /// Permits ever granted.
    pub acquired_total: u64,
}

/// A permit for one piece of database work; dropping it records the round trip.
#[derive(Debug)]
pub struct Permit {
    limiter: Arc<Limiter>,
    started: Instant,
}

impl Drop for Permit {
    fn drop(&mut self) {
        self.limiter.release(self.started.elapsed());
    }
}

impl Limiter {
    /// A limiter starting at `initial`, kept within `[min, max]`.
    pub fn new(initial: usize, min: usize, max: usize) -> Arc<Self> {
        let (min, max) = (min.max(1) as f64, max.max(1) as f64);
        Arc::new(Limiter {
            state: Mutex::new(State {
                limit: (initial as f64).clamp(min, max),
                min,
                max,
                in_flight: 0,
                min_rtt: None,
                samples: 0,
            }),
            released: Notify::new(),
            acquired_total: AtomicU64::new(0),
        })
    }

    /// Waits for a permit, at most `timeout` (then `None`).
    pub async fn acquire(self: &Arc<Self>, timeout: Duration) -> Option<Permit> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let released = self.released.notified();
            {
                let mut state = self.state.lock().expect("limiter lock is never poisoned");
                if (state.in_flight as f64) < state.limit.floor() {
                    state.in_flight += 1;
                    self.acquired_total.fetch_add(1, Ordering::Relaxed);
                    return Some(Permit {
                        limiter: self.clone(),
                        started: Instant::now(),
                    });
                }
            }
            if tokio::time::timeout_at(deadline, released).await.is_err() {
                return None;
            }
        }
    }

    /// The current limit and load.
    pub fn snapshot(&self) -> LimiterSnapshot {
        let state = self.state.lock().expect("limiter lock is never poisoned");
        LimiterSnapshot {
            limit: state.limit.floor() as usize,
            in_flight: state.in_flight,
            acquired_total: self.acquired_total.load(Ordering::Relaxed),
        }
    }

    fn release(&self, rtt: Duration) {
        {
            let mut state = self.state.lock().expect("limiter lock is never poisoned");
            state.in_flight = state.in_flight.saturating_sub(1);
            state.observe(rtt);
        }
        self.released.notify_one();
    }
}

impl State {
    fn observe(&mut self, rtt: Duration) {
        self.samples += 1;
        if self.samples >= MIN_RTT_RESET_SAMPLES {
            self.samples = 0;
            self.min_rtt = None;
        }
        let rtt = rtt.max(Duration::from_micros(1));
        let min_rtt = *self.min_rtt.get_or_insert(rtt);
        let min_rtt = if rtt < min_rtt {
            self.min_rtt = Some(rtt);
            rtt
        } else {
            min_rtt
        };
        let log = self.limit.max(10.0).log10();
        let (alpha, beta) = (3.0 * log, 6.0 * log);
        let queue = self.limit * (1.0 - min_rtt.as_secs_f64() / rtt.as_secs_f64());
        // Grow only when the limit is actually being used, or it would drift up for nothing.
        let busy = (self.in_flight + 1) as f64 * 2.0 >= self.limit;
        if queue <= alpha && busy {
            self.limit += log;
        } else if queue >= beta {
            self.limit -= log;
        }
        self.limit = self.limit.clamp(self.min, self.max);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn permits_beyond_the_limit_wait_for_a_release() {
        let limiter = Limiter::new(2, 1, 2);
        let a = limiter.acquire(Duration::from_secs(1)).await.unwrap();
        let _b = limiter.acquire(Duration::from_secs(1)).await.unwrap();
        assert!(limiter.acquire(Duration::from_millis(20)).await.is_none());
        assert_eq!(limiter.snapshot().in_flight, 2);
        drop(a);
        assert!(limiter.acquire(Duration::from_millis(20)).await.is_some());
        assert_eq!(limiter.snapshot().acquired_total, 3);
    }

    #[test]
    fn a_growing_round_trip_shrinks_the_limit_and_a_steady_one_lets_it_grow() {
        let mut state = State {
            limit: 20.0,
            min: 2.0,
            max: 64.0,
            in_flight: 19,
            min_rtt: None,
            samples: 0,
        };
        state.observe(Duration::from_millis(1));
        for _ in 0..20 {
            state.observe(Duration::from_millis(10));
        }
        assert!(state.limit < 20.0, "limit {} did not shrink", state.limit);
        let low = state.limit;
        state.in_flight = low as usize;
        for _ in 0..20 {
            state.observe(Duration::from_millis(1));
        }
        assert!(state.limit > low, "limit {} did not grow", state.limit);
    }
}
