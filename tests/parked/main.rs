//! What a parked long-poll holds, counted: this binary installs a global allocator that
//! counts live heap bytes, so its tests run a real server (actix's alone, or the broker on
//! the test PostgreSQL), park many requests on connections of their own, and divide the
//! heap they hold by their number (README, "Parked long-polls"). Its own binary, as the
//! allocator counts every thread of the process; its tests take [`MEASURING`] in turn.

mod h1_buffers;
mod live_heap;
mod parked_pop;
mod raw_http;
mod sites;
#[path = "../broker/support/mod.rs"]
mod support;

#[global_allocator]
static HEAP: live_heap::LiveHeap = live_heap::LiveHeap;

/// Held by a test while it measures, so no other test allocates meanwhile.
static MEASURING: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());
