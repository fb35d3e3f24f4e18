//! The streams runtime's calls (`POST /streams/v1/queries`, `/state/get`, `/cycle`) as the
//! broker checked them ([`requests`]) and the checks ([`parse`]). The HTTP routes parse
//! into these, `log::streams` and `db::streams` run them, so no inner code re-reads JSON.

pub mod parse;
pub mod requests;

pub use parse::{parse_cycle, parse_registration, parse_state_query, StreamsInputError};
pub use requests::{Cycle, CycleAck, Registration, StateQuery};
