//! The state every handler sees: the broker's shared parts and the JWT gate, and what a
//! request's authentication decided (its tenant, its producer).

use std::sync::Arc;

use actix_web::{HttpMessage, HttpRequest};

use super::gate::Gate;
use crate::auth::{Identity, Role};
use crate::broker::Broker;
use crate::domain::Tenant;

/// What every handler can reach.
#[derive(Clone)]
pub struct AppState {
    /// The broker's shared parts.
    pub broker: Arc<Broker>,
    /// The JWT gate, when `JWT_ENABLED` is on.
    pub gate: Option<Arc<Gate>>,
}

impl AppState {
    /// The tenant a request acts for: the one the auth gate resolved from the token's
    /// tenant claim, else the default tenant (no authentication, or a token without the
    /// claim, or a skip path called without a token).
    pub fn tenant(&self, req: &HttpRequest) -> Tenant {
        req.extensions()
            .get::<Tenant>()
            .cloned()
            .unwrap_or_else(Tenant::default_tenant)
    }

    /// The producer to stamp on what this request pushes: the verified token's `sub` with
    /// authentication on, nobody without it (a body never names its producer).
    pub fn producer(&self, req: &HttpRequest) -> Option<Arc<str>> {
        req.extensions()
            .get::<Identity>()
            .and_then(|identity| identity.sub.clone())
    }

    /// Whether the caller holds the `read-write` role (or more): always with
    /// authentication off, else when its verified token grants it. For a route whose rule
    /// lets read-only callers in and whose body decides whether it writes (`POST
    /// /api/v1/kv`).
    pub fn can_write(&self, req: &HttpRequest) -> bool {
        self.holds(req, Role::ReadWrite)
    }

    /// Whether the caller holds the `admin` role: always with authentication off (no gate,
    /// every caller is the operator), else when its verified token grants it.
    pub fn is_admin(&self, req: &HttpRequest) -> bool {
        self.holds(req, Role::Admin)
    }

    /// Whether the caller holds `role` or more: always with authentication off.
    fn holds(&self, req: &HttpRequest, role: Role) -> bool {
        self.gate.is_none()
            || req
                .extensions()
                .get::<Identity>()
                .and_then(|identity| identity.role)
                .is_some_and(|held| held >= role)
    }
}
