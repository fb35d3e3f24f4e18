//! Hands the pages freed by stopped group actors back to the operating system.
//!
//! A burst of distinct queue or group names starts tens of thousands of actors on the HTTP
//! workers' threads; when they stop, their memory is free but mimalloc (the binary's
//! allocator) keeps the emptied pages of each thread's heap until that thread allocates
//! from them again, so the process stayed 11-61 MB above where it was before the burst
//! with 2.4 MB of live heap (`tests/broker/nodes/memory.rs`). Every [`STOPS_PER_COLLECT`]
//! actor stops on a thread, that thread's heap is collected: free pages are released and
//! their memory purged. Where mimalloc is not the allocator (the library's own tests), the
//! collect finds an empty heap and costs nothing.

use std::cell::Cell;

/// Actor stops on one thread between two collects of its heap: a collect walks the
/// thread's pages, so it runs once per this many stops, never per stop.
const STOPS_PER_COLLECT: u32 = 256;

thread_local! {
    static STOPS: Cell<u32> = const { Cell::new(0) };
}

/// Counts a group actor that stopped on this thread, and collects the thread's heap when
/// enough have stopped since the last collect.
pub fn actor_stopped() {
    let due = STOPS.with(|stops| {
        let n = stops.get() + 1;
        stops.set(if n >= STOPS_PER_COLLECT { 0 } else { n });
        n >= STOPS_PER_COLLECT
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
