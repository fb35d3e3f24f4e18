//! Who may do what: JWT verification and the role each route needs.
//!
//! - [`role`]: the three roles and how a token grants them.
//! - [`rules`]: the table of (method, route) → access, matched against request paths.
//! - [`verify`]: checks a bearer token (signature, expiry, issuer, audience) with the
//!   `jsonwebtoken` crate and reads its subject, roles and tenant claim; no signature code
//!   is ours.
//! - [`jwks`]: the identity provider's key set, fetched (or read from a file), cached, and
//!   fetched again when a token names a key it has not seen.
//!
//! Turning a refusal into a 401 or 403 answer is `http::auth`'s job; this module answers
//! only "who is this" and "what does this route need".

pub mod jwks;
pub mod role;
pub mod rules;
pub mod verify;

pub use role::Role;
pub use rules::{Access, RouteRules};
pub use verify::{AuthFailure, AuthSetupError, Identity, TenantClaim, Verifier};
