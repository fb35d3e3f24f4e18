//! The partition log's operations as the HTTP handlers use them: push builds segments and
//! appends them, pop claims and slices them (with the long-poll wait), ack groups
//! acknowledgements by partition, transaction applies pushes and acks together; spool is
//! the push path's own fallback: pushes written to local, `fsync`ed files while PostgreSQL
//! is away (or push maintenance is on), answered `buffered`, and replayed in order. It sits
//! beside push because it takes, holds and replays the same pushes: its storage files
//! import nothing of the log, and its intake and replay call the push path.
//!
//! This layer owns the meaning of rows (frames, offsets, per-item answers) and leaves the
//! wire formats to `http` and the SQL to `db`.

pub mod ack;
pub mod encryption;
pub mod groups;
pub mod pop;
pub mod push;
pub mod spool;
pub mod streams;
pub mod transaction;
