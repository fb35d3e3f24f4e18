//! The access each route needs, as one table beside the route table it mirrors.
//!
//! Every `(method, pattern)` the route tables register has a row here; a unit test in
//! `http::auth` reads the route tables' source and fails when one has none, and the README's
//! table lists the same rows. A request that matches no row (an unknown path, or a method
//! the route does not serve) needs `admin`: a route added without a rule is closed, not open.
//!
//! One route asks more than its row once it has read the stored data: `POST
//! /api/v1/configure` is `read-write` here, and its handler (`src/http/configure.rs`) asks
//! `admin` for the changes `src/domain/option_changes.rs` lists (an existing queue's data
//! going sooner or being refused).
//!
//! `POST /api/v1/kv` is `read-only` here, and its handler (`src/http/kv/route.rs`) asks
//! `read-write` of a call holding a write op; so is `POST /api/v1/locks`, whose handler
//! (`src/http/locks/route.rs`) asks `read-write` of a call holding anything but `get`.

use actix_web::dev::ResourceDef;
use actix_web::http::Method;

use super::Role;

/// What a route asks of its caller.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// No token: the console's static files, which hold no data (the console's own API
    /// calls are ordinary routes).
    Public,
    /// A valid token granting at least this role.
    Role(Role),
}

const RO: Access = Access::Role(Role::ReadOnly);
const RW: Access = Access::Role(Role::ReadWrite);
const ADMIN: Access = Access::Role(Role::Admin);

/// Every route: method, pattern exactly as registered, access. More specific patterns come
/// before the templated ones that would also match them.
pub const RULES: &[(&str, &str, Access)] = &[
    ("GET", "/api/openapi.json", RO),
    ("GET", "/health", RO),
    ("GET", "/health/ready", RO),
    ("GET", "/health/live", RO),
    ("GET", "/metrics", RO),
    ("GET", "/metrics/prometheus", RO),
    ("POST", "/api/v1/push", RW),
    ("GET", "/api/v1/pop", RW),
    ("GET", "/api/v1/pop/queue/{queue}", RW),
    ("GET", "/api/v1/pop/queue/{queue}/partition/{partition}", RW),
    ("POST", "/api/v1/ack", RW),
    ("POST", "/api/v1/ack/batch", RW),
    ("POST", "/api/v1/transaction", RW),
    ("POST", "/api/v1/lease/{lease_id}/extend", RW),
    ("POST", "/api/v1/fetch", RO),
    ("POST", "/api/v1/partitions/changed", RO),
    ("POST", "/api/v1/kv", RO),
    ("POST", "/api/v1/locks", RO),
    ("POST", "/api/v1/timers", RW),
    ("GET", "/api/v1/timers/{queue}", RO),
    ("GET", "/api/v1/timers/{queue}/{timer_key:.*}", RO),
    ("DELETE", "/api/v1/timers/{queue}/{timer_key:.*}", RW),
    ("POST", "/streams/v1/queries", RW),
    ("POST", "/streams/v1/state/get", RO),
    ("POST", "/streams/v1/cycle", RW),
    ("POST", "/api/v1/ephemeral/configure", RW),
    ("POST", "/api/v1/ephemeral/reset", RW),
    ("DELETE", "/api/v1/ephemeral/queue/{queue}", RW),
    ("POST", "/api/v1/ephemeral/push", RW),
    ("GET", "/api/v1/ephemeral/pop", RW),
    ("POST", "/api/v1/ephemeral/ack", RW),
    ("GET", "/api/v1/ephemeral/queues", RO),
    ("GET", "/api/v1/ephemeral/queues/{queue}/depth", RO),
    ("POST", "/api/v1/configure", RW),
    ("GET", "/api/v1/system/maintenance", RO),
    ("POST", "/api/v1/system/maintenance", ADMIN),
    ("PUT", "/api/v1/system/maintenance", ADMIN),
    ("GET", "/api/v1/consumer-groups", RO),
    ("GET", "/api/v1/consumer-groups/lagging", RO),
    ("GET", "/api/v1/consumer-groups/{group}", RO),
    ("DELETE", "/api/v1/consumer-groups/{group}", ADMIN),
    (
        "DELETE",
        "/api/v1/consumer-groups/{group}/queues/{queue}",
        ADMIN,
    ),
    ("POST", "/api/v1/consumer-groups/{group}/subscription", RW),
    (
        "POST",
        "/api/v1/consumer-groups/{group}/queues/{queue}/seek",
        ADMIN,
    ),
    ("GET", "/api/v1/dlq", RO),
    (
        "POST",
        "/api/v1/messages/{partition_id}/{transaction_id}/retry",
        ADMIN,
    ),
    ("GET", "/api/v1/messages", RO),
    (
        "GET",
        "/api/v1/messages/{partition_id}/{transaction_id}",
        RO,
    ),
    (
        "DELETE",
        "/api/v1/messages/{partition_id}/{transaction_id}",
        ADMIN,
    ),
    ("GET", "/api/v1/resources/overview", RO),
    ("GET", "/api/v1/resources/queues", RO),
    ("GET", "/api/v1/resources/queues/{queue}", RO),
    ("DELETE", "/api/v1/resources/queues/{queue}", ADMIN),
    ("GET", "/api/v1/resources/queues/{queue}/depth", RO),
    ("GET", "/api/v1/resources/partitions", RO),
    ("GET", "/api/v1/resources/namespaces", RO),
    ("GET", "/api/v1/resources/kv", RO),
    ("GET", "/api/v1/resources/kv/{namespace}", RO),
    ("GET", "/api/v1/resources/tasks", RO),
    ("GET", "/api/v1/status", RO),
    ("GET", "/api/v1/status/queues", RO),
    ("GET", "/api/v1/status/queues/{queue}", RO),
    ("GET", "/api/v1/status/analytics", RO),
    ("POST", "/api/v1/stats/refresh", RW),
    ("GET", "/api/v1/analytics/system-metrics", RO),
    ("GET", "/api/v1/analytics/worker-metrics", RO),
    ("POST", "/api/v1/traces", RW),
    ("GET", "/api/v1/traces/names", RO),
    ("GET", "/api/v1/traces/by-name/{name}", RO),
    ("GET", "/api/v1/traces/{partition_id}/{transaction_id}", RO),
    ("GET", "/", Access::Public),
    ("GET", "/console/assets/{file}", Access::Public),
    ("GET", "/console", Access::Public),
    ("GET", "/console/{view:.*}", Access::Public),
];

/// [`RULES`] compiled for matching request paths.
pub struct RouteRules {
    rules: Vec<(Method, ResourceDef, Access)>,
}

impl Default for RouteRules {
    fn default() -> Self {
        Self::new()
    }
}

impl RouteRules {
    /// Compiles [`RULES`].
    pub fn new() -> Self {
        let rules = RULES
            .iter()
            .map(|(method, pattern, access)| {
                let method = Method::from_bytes(method.as_bytes())
                    .expect("the rules table names valid HTTP methods");
                (method, ResourceDef::new(*pattern), *access)
            })
            .collect();
        RouteRules { rules }
    }

    /// What a request with this method and (normalised) path needs: its route's rule, or
    /// `admin` when no rule matches.
    pub fn access(&self, method: &Method, path: &str) -> Access {
        self.rules
            .iter()
            .find(|(m, def, _)| m == method && def.is_match(path))
            .map_or(ADMIN, |(_, _, access)| *access)
    }

    /// The access of the rule registered for exactly this pattern, if there is one (the
    /// route-table test's question).
    pub fn rule_for(method: &str, pattern: &str) -> Option<Access> {
        RULES
            .iter()
            .find(|(m, p, _)| m.eq_ignore_ascii_case(method) && *p == pattern)
            .map(|(_, _, access)| *access)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_match_their_templated_rules_and_unknown_ones_need_admin() {
        let rules = RouteRules::new();
        let get = Method::GET;
        assert_eq!(rules.access(&get, "/api/v1/pop/queue/orders"), RW);
        assert_eq!(rules.access(&get, "/api/v1/consumer-groups/lagging"), RO);
        assert_eq!(
            rules.access(&Method::DELETE, "/api/v1/consumer-groups/g"),
            ADMIN
        );
        assert_eq!(
            rules.access(&Method::POST, "/api/v1/messages/1/t/retry"),
            ADMIN
        );
        assert_eq!(rules.access(&get, "/console/queues/x"), Access::Public);
        assert_eq!(rules.access(&get, "/no/such/route"), ADMIN);
        assert_eq!(rules.access(&Method::DELETE, "/api/v1/push"), ADMIN);
        assert_eq!(rules.access(&Method::PATCH, "/api/v1/dlq"), ADMIN);
    }
}
