//! The partition log's operations as the HTTP handlers use them: push builds segments and
//! appends them, pop claims and slices them (with the long-poll wait), ack groups
//! acknowledgements by partition, transaction applies pushes and acks together.
//!
//! This layer owns the meaning of rows (frames, offsets, per-item answers) and leaves the
//! wire formats to `http` and the SQL to `db`.

pub mod ack;
pub mod encryption;
pub mod groups;
pub mod pop;
pub mod push;
pub mod streams;
pub mod transaction;
