//! `/api/v1/timers`, durable timers: [`route`] is `POST` (schedule, reschedule, cancel in
//! one round trip), [`key`] the `GET` (peek) and `DELETE` (cancel) of one key, whose path
//! tail may hold `/`, and [`list`] a queue's keyset pages. The envelope, the permit and
//! the connection are the KV routes' (`http::kv::call`, `http::kv::error`); the ops and
//! their checks are `domain::timers`'s, shared with the transaction rider. README
//! "Timers" lists the choices the contract left open.

pub mod key;
pub mod list;
pub mod route;

use crate::domain::timers::TimerInputError;
use crate::http::kv::error::KvError;

/// A refused call: 400 with the input's reason.
fn refused(e: TimerInputError) -> KvError {
    KvError::bad_request(e.reason, e.detail)
}
