//! `POST /api/v1/locks`, locks and semaphores as leases with a fencing token: [`route`]
//! checks the caller and the body and runs the call through `db::locks` in one round trip.
//! Errors use the KV store's `{error, reason, detail}` envelope (`http::kv::error`); the ops
//! and their checks are `domain::locks`'s. README "Locks" lists the choices the contract
//! left open.

pub mod route;
