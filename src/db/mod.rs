//! The only module that speaks SQL.
//!
//! It owns the connection pool ([`pool`]), the embedded PostgreSQL launcher ([`embedded`]),
//! the schema installer ([`schema`]), one Rust function per SQL function (`push`, `pop`,
//! `ack`, `lease`, `queues`, the read views' in [`reads`], and the admin endpoints' in
//! [`admin`]), the caller-owned data
//! transaction ([`transaction`]), TLS to the server ([`tls`]) and the database error type
//! ([`error`]). Callers never see a
//! SQL string; what the rows mean (frames, JSON) is decided elsewhere.

pub mod ack;
pub mod admin;
pub mod embedded;
pub mod ephemeral;
pub mod error;
pub mod groups;
pub mod kv;
pub mod kv_single;
pub mod lease;
pub mod locks;
pub mod pool;
pub mod pop;
pub mod push;
pub mod queues;
pub mod reads;
pub mod retention;
pub mod schema;
pub mod streams;
pub mod system;
pub mod timers;
pub mod tls;
pub mod transaction;

pub use error::DbError;
pub use pool::{Conn, Db, PgConn, PoolShape};
