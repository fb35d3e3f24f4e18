//! Durable timers' ops as the broker checked them ([`ops`]), the checks ([`parse`]) and
//! the bounds they enforce ([`limits`]). Shared by `POST /api/v1/timers`, the `DELETE`
//! route's cancel and the transaction rider's `timers` ops, which all run the same SQL
//! engine (`sql/functions/timers_apply_v1.sql`).

pub mod limits;
pub mod ops;
pub mod parse;

pub use ops::{TimerBatch, TimerOp, TimerOpKind};
pub use parse::{parse_ops, TimerInputError};
