//! Tenants over real HTTP with real signed tokens: the tenant claim (absent, required,
//! malformed, renamed), what a tenant sees of the node (metrics, maintenance), and the
//! limits per tenant. Isolation between two tenants across two broker processes, route by
//! route, is `nodes::tenants`.

mod claims;
mod limits;

use crate::support::tokens::SECRET;

/// Settings of a broker checking HS256 tokens under [`SECRET`].
pub const HS256: [(&str, &str); 2] = [("JWT_ENABLED", "true"), ("JWT_SECRET", SECRET)];

/// The tenants owning queues in the broker's database, with the queue names, sorted.
pub async fn stored_queues(sql: &tokio_postgres::Client) -> Vec<(String, String)> {
    sql.query(
        "SELECT tenant, name FROM queen.queues ORDER BY tenant, name",
        &[],
    )
    .await
    .expect("read the queues")
    .iter()
    .map(|r| (r.get(0), r.get(1)))
    .collect()
}
