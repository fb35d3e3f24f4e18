//! Locks and semaphores as leases with a fencing token: the ops of `POST /api/v1/locks` as
//! the broker checked them ([`ops`]) and the checks ([`parse`]). A permit is a row of the
//! key/value store (namespace [`NAMESPACE`], key `<name>#<slot>`, the row's version as the
//! token); `sql/functions/locks_apply_v1.sql` turns the ops into KV row writes.

pub mod ops;
pub mod parse;

pub use ops::{LockBatch, LockOp, LockOpKind};
pub use parse::{parse_ops, LocksInputError};

/// The KV namespace that holds every permit, so a permit's `guard` is a plain KV `check`.
pub const NAMESPACE: &str = "queen-locks";
/// Ops in one call at most.
pub const MAX_OPS: usize = 64;
/// Bytes of a lock's name (and of an owner) at most.
pub const MAX_NAME_BYTES: usize = 256;
/// Permits of one semaphore at most; slots are `0..limit`.
pub const MAX_LIMIT: i64 = 1024;
