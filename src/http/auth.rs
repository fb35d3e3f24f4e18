//! The authentication gate: an actix middleware in front of every route when `JWT_ENABLED`
//! is on. It lets the skip paths (the probes) and the console's static files through, reads
//! the bearer token, has `crate::auth` verify it, resolves the caller's tenant from the
//! token's tenant claim, checks the role the route needs, and leaves the caller's
//! [`Identity`] and [`Tenant`] in the request's extensions for the handlers (push stamps
//! its `sub`, every handler acts in its tenant). Refusals are `ApiError`s, so their status
//! and body are decided in `error` like every other answer: 401 without a valid token, 403
//! without the role or with a tenant claim that is not a valid name (or missing when
//! `QUEEN_JWT_REQUIRE_TENANT` asks for one).
//!
//! A skip path needs no token, but a valid one is still read: its tenant then decides what
//! the path shows (the metrics of that tenant only); without one the path acts in the
//! default tenant, the operator's.

use actix_web::body::{EitherBody, MessageBody};
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::header;
use actix_web::middleware::Next;
use actix_web::{web, Error, HttpMessage, ResponseError};
use tracing::debug;

use super::{ApiError, AppState};
use crate::auth::{Access, AuthFailure, Identity, RouteRules, TenantClaim, Verifier};
use crate::domain::Tenant;

/// What the gate needs: the verifier, the compiled rules and the open paths.
pub struct Gate {
    verifier: Verifier,
    rules: RouteRules,
    skip_paths: Vec<String>,
    require_tenant: bool,
}

impl Gate {
    /// A gate verifying with `verifier` and letting `skip_paths` through without a token;
    /// `require_tenant` refuses tokens without a tenant claim.
    pub fn new(verifier: Verifier, skip_paths: Vec<String>, require_tenant: bool) -> Self {
        Gate {
            verifier,
            rules: RouteRules::new(),
            skip_paths,
            require_tenant,
        }
    }

    /// The tenant a verified token acts in, or the 403 of a token whose claim names none.
    fn tenant(&self, identity: &Identity) -> Result<Tenant, ApiError> {
        match &identity.tenant {
            TenantClaim::Named(tenant) => Ok(tenant.clone()),
            TenantClaim::Absent if !self.require_tenant => Ok(Tenant::default_tenant()),
            TenantClaim::Absent => Err(ApiError::Forbidden(
                "this broker requires a tenant claim in the token".to_owned(),
            )),
            TenantClaim::Invalid(why) => Err(ApiError::Forbidden(why.clone())),
        }
    }

    /// On a skip path: the tenant of a valid token if the request carries one (anything
    /// else leaves the request in the default tenant, as without a token).
    async fn optional_tenant(&self, req: &ServiceRequest) -> Option<(Identity, Tenant)> {
        let identity = self.verifier.verify(bearer(req)?).await.ok()?;
        let tenant = self.tenant(&identity).ok()?;
        Some((identity, tenant))
    }

    fn skips(&self, path: &str) -> bool {
        self.skip_paths
            .iter()
            .any(|skip| match skip.strip_suffix('*') {
                Some(prefix) => path.starts_with(prefix),
                None => path == skip,
            })
    }

    /// The caller's identity and tenant, or the refusal to answer with.
    async fn admit(&self, req: &ServiceRequest) -> Result<Option<(Identity, Tenant)>, ApiError> {
        let path = req.match_info().as_str();
        if self.skips(path) {
            return Ok(self.optional_tenant(req).await);
        }
        let needed = match self.rules.access(req.method(), path) {
            Access::Public => return Ok(None),
            Access::Role(role) => role,
        };
        let token = bearer(req).ok_or(AuthFailure::Missing);
        let identity = match token {
            Ok(token) => self.verifier.verify(token).await,
            Err(missing) => Err(missing),
        }
        .map_err(|failure| {
            debug!(error = %failure, "request refused: no valid token");
            ApiError::Unauthorized(match failure {
                AuthFailure::Missing => "missing bearer token".to_owned(),
                AuthFailure::Invalid(_) => "invalid token".to_owned(),
            })
        })?;
        let tenant = self.tenant(&identity).inspect_err(|_| {
            debug!(sub = ?identity.sub, "request refused: tenant claim");
        })?;
        if identity.role.is_some_and(|granted| granted >= needed) {
            return Ok(Some((identity, tenant)));
        }
        debug!(sub = ?identity.sub, needed = %needed, "request refused: role missing");
        Err(ApiError::Forbidden(format!(
            "this route needs the {needed} role"
        )))
    }
}

/// The middleware function (`actix_web::middleware::from_fn(guard)`); a pass-through when
/// authentication is off.
pub async fn guard(
    req: ServiceRequest,
    next: Next<impl MessageBody>,
) -> Result<ServiceResponse<EitherBody<impl MessageBody>>, Error> {
    let gate = req
        .app_data::<web::Data<AppState>>()
        .and_then(|state| state.gate.clone());
    let Some(gate) = gate else {
        return Ok(next.call(req).await?.map_into_left_body());
    };
    match gate.admit(&req).await {
        Ok(identity) => {
            if let Some((identity, tenant)) = identity {
                let mut extensions = req.extensions_mut();
                extensions.insert(identity);
                extensions.insert(tenant);
            }
            Ok(next.call(req).await?.map_into_left_body())
        }
        Err(refusal) => Ok(req.into_response(refusal.error_response().map_into_right_body())),
    }
}

/// The token of `Authorization: Bearer <token>` (or a bare token, which the old server
/// accepted too).
fn bearer(req: &ServiceRequest) -> Option<&str> {
    let value = req
        .headers()
        .get(header::AUTHORIZATION)?
        .to_str()
        .ok()?
        .trim();
    let token = match value.split_once(' ') {
        Some((scheme, rest)) if scheme.eq_ignore_ascii_case("bearer") => rest.trim(),
        Some(_) => return None,
        None => value,
    };
    (!token.is_empty()).then_some(token)
}

#[cfg(test)]
mod tests {
    use crate::auth::rules::RULES;
    use crate::auth::RouteRules;
    use crate::http::route_table::{registered, TABLES};

    /// Every route the route tables register has its own rule, and a request to it (its
    /// template filled in) is judged by that rule, not by the closed default.
    #[test]
    fn every_route_in_the_route_tables_has_an_access_rule() {
        let rules = RouteRules::new();
        let mut missing = Vec::new();
        let mut seen = 0;
        for (file, source) in TABLES {
            for (method, pattern) in registered(source) {
                seen += 1;
                let Some(rule) = RouteRules::rule_for(&method, &pattern) else {
                    missing.push(format!("{} {pattern} ({file})", method.to_uppercase()));
                    continue;
                };
                let path = pattern
                    .split('/')
                    .map(|seg| if seg.starts_with('{') { "x" } else { seg })
                    .collect::<Vec<_>>()
                    .join("/");
                let method = actix_web::http::Method::from_bytes(method.to_uppercase().as_bytes())
                    .expect("a method");
                assert_eq!(rules.access(&method, &path), rule, "{method} {path}");
            }
        }
        assert!(seen > 50, "the route tables were not read: {seen} routes");
        assert!(
            missing.is_empty(),
            "routes without an access rule (add them to src/auth/rules.rs and the README):\n{}",
            missing.join("\n")
        );
        assert_eq!(
            seen,
            RULES.len(),
            "the rules table lists a route that is not registered"
        );
    }
}
