//! Connections an HTTP worker keeps on its own thread.
//!
//! A tokio-postgres connection is two halves: the client a request uses, and the task that
//! does the socket's I/O, which runs on whichever runtime opened it. A shared pool's
//! connections are opened from any thread, so nearly every query a worker sends wakes
//! another thread to write it and is woken back when the answer arrives: at batch 10 a
//! third of the broker's CPU went to the kernel's task switches (`perf`, pop+ack phase).
//! Each worker's own small pool is opened from that worker's thread, so its queries stay
//! there; when all of them are busy the worker takes a shared connection, as before.

use std::cell::Cell;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;
use std::time::Duration;

use super::{Manager, PoolShape};

/// Tells pools of different brokers in one process apart.
static NEXT_ID: AtomicUsize = AtomicUsize::new(1);

thread_local! {
    /// (pools id, worker slot) of the HTTP worker this thread is; id 0: none.
    static THIS_WORKER: Cell<(usize, usize)> = const { Cell::new((0, 0)) };
}

/// One pool per HTTP worker, each opened from its own thread.
pub(super) struct WorkerPools {
    id: usize,
    per_worker: u32,
    manager: Manager,
    checkout_timeout: Duration,
    pools: Vec<OnceLock<bb8::Pool<Manager>>>,
}

impl WorkerPools {
    pub(super) fn new(manager: &Manager, shape: PoolShape, checkout_timeout: Duration) -> Self {
        let slots = if shape.per_worker == 0 {
            0
        } else {
            shape.workers
        };
        Self {
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            per_worker: shape.per_worker,
            manager: manager.clone(),
            checkout_timeout,
            pools: (0..slots).map(|_| OnceLock::new()).collect(),
        }
    }

    /// Connections set aside for the workers, all together.
    pub(super) fn connections(&self) -> u32 {
        self.per_worker
            .saturating_mul(u32::try_from(self.pools.len()).unwrap_or(u32::MAX))
    }

    /// Makes the calling thread worker `slot` and opens its pool (from this thread's
    /// runtime, so the connections' I/O tasks run here). A restarted worker takes over the
    /// pool of its slot; connections whose tasks ended with the old thread are found
    /// closed at check-out and replaced.
    pub(super) fn bind(&self, slot: usize) {
        if self.pools.is_empty() {
            return;
        }
        let slot = slot % self.pools.len();
        self.pools[slot].get_or_init(|| {
            bb8::Pool::builder()
                .max_size(self.per_worker)
                .min_idle(Some(self.per_worker))
                .connection_timeout(self.checkout_timeout)
                .test_on_check_out(false)
                .build_unchecked(self.manager.clone())
        });
        THIS_WORKER.with(|w| w.set((self.id, slot)));
    }

    /// The calling worker's own pool when it has a connection idle right now; otherwise
    /// (another thread, all busy, not opened yet) the caller uses the shared pool. Only
    /// this thread takes from its pool, so an idle connection seen here is still there
    /// when taken.
    pub(super) fn idle_on_this_thread(&self) -> Option<&bb8::Pool<Manager>> {
        let (id, slot) = THIS_WORKER.with(Cell::get);
        if id != self.id {
            return None;
        }
        let pool = self.pools.get(slot)?.get()?;
        (pool.state().idle_connections > 0).then_some(pool)
    }

    /// Connections open and idle in the workers' pools.
    pub(super) fn state(&self) -> (u32, u32) {
        self.pools
            .iter()
            .filter_map(OnceLock::get)
            .map(bb8::Pool::state)
            .fold((0, 0), |(open, idle), s| {
                (open + s.connections, idle + s.idle_connections)
            })
    }
}
