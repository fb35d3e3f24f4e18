//! The read views of tier 3: `POST /api/v1/fetch` (offset reads, [`fetch`]) and
//! `POST /api/v1/partitions/changed` (partition discovery, [`changed`]).
//!
//! Both are read-only: they take a pooled connection and no limiter permit, write no lease,
//! cursor or statistics, and never meet a group actor. The SQL is `db::reads`'; this module
//! parses the bodies ([`fetch_request`], [`changed_request`]) and renders the answers
//! ([`fetch_render`], or framed, [`fetch_framed`]). README "Offset reads and partition discovery" lists the choices the
//! contract left open.

pub mod changed;
pub mod changed_request;
pub mod fetch;
pub mod fetch_framed;
pub mod fetch_render;
pub mod fetch_request;
