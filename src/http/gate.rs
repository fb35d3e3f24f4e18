//! The authentication gate (see `http::auth` for where it stands): it lets the skip paths
//! and the console's static files through, reads the bearer token, has `crate::auth` verify
//! it, resolves the caller's tenant and checks the role the route needs.

use actix_web::dev::ServiceRequest;
use actix_web::http::header;
use tracing::debug;

use super::error::ApiError;
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
    pub(super) async fn admit(
        &self,
        req: &ServiceRequest,
    ) -> Result<Option<(Identity, Tenant)>, ApiError> {
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
