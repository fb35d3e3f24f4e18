//! `POST /api/v1/kv`, the key/value store: [`route`] checks the caller and the body and
//! runs the batch through `db::kv` in one round trip; [`error`] is its
//! `{error, reason, detail}` envelope; [`call`] is what it shares with `POST /api/v1/locks`
//! around the engine (the body's operations, the permit and connection, the answer). The
//! ops and their checks are `domain::kv`'s, so the transaction rider can share them.
//! README "Key/value" lists the choices the contract left open.

pub mod call;
pub mod error;
pub mod route;
