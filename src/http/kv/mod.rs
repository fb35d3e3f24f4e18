//! `POST /api/v1/kv`, the key/value store: [`route`] checks the caller and the body and
//! runs the batch through `db::kv` in one round trip; [`error`] is its
//! `{error, reason, detail}` envelope. The ops and their checks are `domain::kv`'s, so the
//! transaction rider can share them. README "Key/value" lists the choices the contract
//! left open.

pub mod error;
pub mod route;
