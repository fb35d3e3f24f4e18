//! The key/value store's ops as the broker checked them ([`ops`]), the checks ([`parse`])
//! and the bounds they enforce ([`limits`]). Shared by `POST /api/v1/kv` and, later, the
//! transaction rider's `kv` ops, which run the same SQL engine
//! (`sql/functions/kv_apply_v1.sql`).

pub mod limits;
pub mod ops;
pub mod parse;

pub use ops::{KvBatch, KvOp, KvOpKind};
pub use parse::{parse_ops, KvInputError};
