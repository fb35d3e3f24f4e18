//! Hands the pages freed by stopped group actors back to the operating system.
//!
//! A burst of distinct queue or group names starts tens of thousands of actors on the HTTP
//! workers' threads; when they stop, their memory is free but mimalloc (the binary's
//! allocator) keeps the emptied pages of each thread's heap until that thread allocates
//! from them again, so the process stayed 11-61 MB above where it was before the burst
//! with 2.4 MB of live heap (`tests/broker/nodes/memory.rs`). Every [`STOPS_PER_COLLECT`]
//! actor stops on a thread, and when the last actor living on a thread stops, that
//! thread's heap is collected: free pages are released and their memory purged. (An actor
//! starts and stops on its arbiter's thread, so a per-thread count is exact.) Where mimalloc is not the allocator (the library's own tests), the
//! collect finds an empty heap and costs nothing.

use std::cell::Cell;

/// Actor stops on one thread between two collects of its heap: a collect walks the
/// thread's pages, so it runs once per this many stops, never per stop.
const STOPS_PER_COLLECT: u32 = 256;

thread_local! {
    static STOPS: Cell<u32> = const { Cell::new(0) };
    static LIVING: Cell<u64> = const { Cell::new(0) };
}

/// Counts a group actor that started on this thread.
pub fn actor_started() {
    LIVING.with(|living| living.set(living.get() + 1));
}

/// Counts a group actor that stopped on this thread, and collects the thread's heap when
/// enough have stopped since the last collect, or when it was the thread's last.
pub fn actor_stopped() {
    let last = LIVING.with(|living| {
        let n = living.get().saturating_sub(1);
        living.set(n);
        n == 0
    });
    let due = STOPS.with(|stops| {
        let n = stops.get() + 1;
        let due = n >= STOPS_PER_COLLECT || last;
        stops.set(if due { 0 } else { n });
        due
    });
    if due {
        collect();
    }
}

/// Releases this thread's free pages and purges the memory behind them.
fn collect() {
    // SAFETY: `mi_collect` takes no pointers and only walks the calling thread's own heap
    // and the allocator's shared segment caches, under the allocator's own locking.
    unsafe { libmimalloc_sys::mi_collect(true) };
}
