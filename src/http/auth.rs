//! The authentication step in front of every route (run by `front::front`): a pass-through
//! unless `JWT_ENABLED` is on, when the [`Gate`](super::gate::Gate) judges each request. It lets
//! the skip paths (the probes) and the console's static files through, reads the bearer
//! token, has `crate::auth` verify it, resolves the caller's tenant from the token's tenant
//! claim, checks the role the route needs, and leaves the caller's [`Identity`] and
//! [`Tenant`] in the request's extensions for the handlers (push stamps its `sub`, every
//! handler acts in its tenant). Refusals are `ApiError`s, so their status and body are
//! decided in `error` like every other answer: 401 without a valid token, 403
//! without the role or with a tenant claim that is not a valid name (or missing when
//! `QUEEN_JWT_REQUIRE_TENANT` asks for one).
//!
//! A skip path needs no token, but a valid one is still read: its tenant then decides what
//! the path shows (the metrics of that tenant only); without one the path acts in the
//! default tenant, the operator's.

use actix_web::dev::ServiceRequest;
use actix_web::{web, HttpMessage};

use super::error::ApiError;
use super::state::AppState;

/// Judges a request (called by `front::front` after the slashes are merged): `Ok` lets it
/// through, with the caller's identity and tenant in its extensions when a token was read;
/// `Err` is the refusal to answer with. Always `Ok` when authentication is off.
pub async fn admit(req: &ServiceRequest) -> Result<(), ApiError> {
    let gate = req
        .app_data::<web::Data<AppState>>()
        .and_then(|state| state.gate.clone());
    let Some(gate) = gate else {
        return Ok(());
    };
    // Boxed: a request that waits long (a parked pop) keeps its front future, which then
    // need not be sized for the token check's state (README, "Parked long-polls").
    if let Some((identity, tenant)) = Box::pin(gate.admit(req)).await? {
        let mut extensions = req.extensions_mut();
        extensions.insert(identity);
        extensions.insert(tenant);
    }
    Ok(())
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
