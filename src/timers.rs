//! Durable timers' background side: on every node, a fire loop ([`fire`]) turns due timers
//! into messages, and [`wake`] lets a schedule made on this node shorten the loop's sleep.
//! The routes are `http::timers`, the ops `domain::timers`, the SQL `db::timers`.

pub mod fire;
pub mod wake;

pub use fire::spawn;
