//! Ephemeral queues: contents in this node's memory only, declarations in PostgreSQL
//! (`sql/migrations/071_ephemeral.sql`). For presence, telemetry and live fan-out, where
//! speed matters and a restart may lose what is in flight.
//!
//! - [`engine`]: every queue this node owns and the broker-wide byte [`budget`];
//!   [`counters`]: what only grows (losses of queues gone, calls forwarded).
//! - [`queue`]: one queue, its rings and the `Notify` a push rings for parked pops.
//! - [`store`]: the arena held payloads live in (the cap bounds memory, not only counts).
//! - [`ring`]: one (queue, partition) ring: FIFO, bounded by bytes and length, TTL.
//! - [`cursor`]: one group's place in a ring and its leases (redelivery, attempts).
//! - [`run`]: a call end to end on this node (declarations, implicit creation, the long
//!   poll).
//!
//! Which node owns a queue, and the forwarding of calls to it, is `crate::mesh`'s
//! (README "Ephemeral queues").

pub mod budget;
pub mod counters;
pub mod cursor;
pub mod engine;
pub mod owner;
pub mod queue;
pub mod ring;
pub mod run;
pub mod serve;
pub mod store;

pub use engine::Ephemeral;
