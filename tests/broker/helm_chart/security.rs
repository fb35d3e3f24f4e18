//! The chart's security knobs: JWT settings wired from a Secret (the chart's own or one the
//! user manages), and the optional NetworkPolicy that admits only the brokers to the mesh
//! port.

use super::render::{self, selects, text, EnvSource};
use super::FULLNAME;

fn secret_ref(name: &str, key: &str) -> EnvSource {
    EnvSource::Secret {
        name: name.to_owned(),
        key: key.to_owned(),
    }
}

/// Off by default: no JWT variable reaches the brokers and no NetworkPolicy is rendered.
#[test]
fn helm_template_by_default_passes_no_jwt_setting_and_renders_no_network_policy() {
    let r = render::render(&[]);
    for name in [
        "JWT_ENABLED",
        "JWT_SECRET",
        "JWT_PUBLIC_KEY",
        "JWT_ALGORITHM",
    ] {
        assert_eq!(r.env(name), None, "{name}");
    }
    assert!(r.all("NetworkPolicy").is_empty());
}

/// With JWT on, the plain settings are in the ConfigMap, and the keys come from the chart's
/// Secret, which stores the secret given in values (optional keys, so an RS256 deployment
/// needs no HMAC secret).
#[test]
fn helm_template_wires_jwt_settings_and_keys_from_the_chart_secret() {
    // Arrange + Act
    let r = render::render(&[
        ("auth.jwt.enabled", "true"),
        ("auth.jwt.algorithm", "RS256"),
        ("auth.jwt.issuer", "https://idp.example"),
        ("auth.jwt.audience", "queen"),
        ("auth.jwt.jwksUrl", "http://idp.example/jwks.json"),
        ("auth.jwt.rolesClaim", "groups"),
        ("auth.jwt.secret", "hmac-key"),
    ]);

    // Assert
    assert_eq!(r.setting("JWT_ENABLED"), "true");
    assert_eq!(r.setting("JWT_ALGORITHM"), "RS256");
    assert_eq!(r.setting("JWT_ISSUER"), "https://idp.example");
    assert_eq!(r.setting("JWT_AUDIENCE"), "queen");
    assert_eq!(r.setting("JWT_JWKS_URL"), "http://idp.example/jwks.json");
    assert_eq!(r.setting("JWT_CLOCK_SKEW"), "30");
    assert_eq!(r.setting("QUEEN_JWT_ROLES_CLAIM"), "groups");
    assert_eq!(
        r.env("JWT_SECRET"),
        Some(secret_ref(FULLNAME, "jwt-secret"))
    );
    assert_eq!(
        r.env("JWT_PUBLIC_KEY"),
        Some(secret_ref(FULLNAME, "jwt-public-key"))
    );
    let secret = r.one("Secret");
    assert_eq!(secret["data"]["jwt-secret"], "aG1hYy1rZXk="); // base64 of "hmac-key"
    let env = r.broker()["env"].as_array().expect("env").clone();
    for entry in env.iter().filter(|e| text(&e["name"]).starts_with("JWT_")) {
        assert_eq!(
            entry["valueFrom"]["secretKeyRef"]["optional"], true,
            "{entry}"
        );
    }
}

/// The tenant claim settings go with the JWT ones, and the limits per tenant are in the
/// ConfigMap when set (a `0` limit, the default, is left out).
#[test]
fn helm_template_wires_the_tenant_claim_and_the_limits_per_tenant() {
    let r = render::render(&[
        ("auth.jwt.enabled", "true"),
        ("auth.jwt.tenantClaim", "org"),
        ("auth.jwt.requireTenant", "true"),
        ("tenantLimits.maxQueues", "50"),
        ("tenantLimits.maxPopTimeoutMs", "20000"),
    ]);
    assert_eq!(r.setting("QUEEN_JWT_TENANT_CLAIM"), "org");
    assert_eq!(r.setting("QUEEN_JWT_REQUIRE_TENANT"), "true");
    assert_eq!(r.setting("QUEEN_TENANT_MAX_QUEUES"), "50");
    assert_eq!(r.setting("QUEEN_TENANT_MAX_POP_TIMEOUT_MS"), "20000");
    let defaults = render::render(&[]);
    for name in [
        "QUEEN_JWT_REQUIRE_TENANT",
        "QUEEN_TENANT_MAX_QUEUES",
        "QUEEN_TENANT_MAX_PARTITIONS_PER_QUEUE",
        "QUEEN_TENANT_MAX_CONSUMER_GROUPS",
        "QUEEN_TENANT_MAX_POP_BATCH",
        "QUEEN_TENANT_MAX_POP_TIMEOUT_MS",
    ] {
        assert_eq!(defaults.env(name), None, "{name}");
    }
}

/// A Secret the user manages holds the keys under the configured key names.
#[test]
fn helm_template_reads_jwt_keys_from_an_existing_secret() {
    let r = render::render(&[
        ("auth.jwt.enabled", "true"),
        ("auth.jwt.existingSecret", "idp-keys"),
        ("auth.jwt.secretKeys.publicKey", "pem"),
    ]);
    assert_eq!(r.env("JWT_PUBLIC_KEY"), Some(secret_ref("idp-keys", "pem")));
    assert_eq!(
        r.env("JWT_SECRET"),
        Some(secret_ref("idp-keys", "jwt-secret"))
    );
    assert!(r.one("Secret")["data"].get("jwt-secret").is_none());
}

/// The NetworkPolicy selects the broker pods, admits only those same pods to the mesh port,
/// and admits `httpFrom` (or everyone) to the HTTP port.
#[test]
fn helm_template_network_policy_admits_only_brokers_to_the_mesh_port() {
    // Arrange + Act
    let r = render::render(&[("networkPolicy.enabled", "true")]);

    // Assert
    let policy = r.one("NetworkPolicy");
    let pods = &r.brokers()["spec"]["template"]["metadata"]["labels"];
    assert!(selects(&policy["spec"]["podSelector"]["matchLabels"], pods));
    let rules = policy["spec"]["ingress"].as_array().expect("ingress rules");
    let port_of = |rule: &serde_json::Value| rule["ports"][0]["port"].as_i64();
    let mesh = rules
        .iter()
        .find(|r| port_of(r) == Some(6633))
        .expect("a mesh rule");
    let from = mesh["from"].as_array().expect("mesh sources");
    assert_eq!(from.len(), 1, "{mesh}");
    assert!(selects(&from[0]["podSelector"]["matchLabels"], pods));
    let postgres_like = serde_json::json!({"app.kubernetes.io/name": "queen", "app.kubernetes.io/component": "postgresql"});
    assert!(!selects(
        &from[0]["podSelector"]["matchLabels"],
        &postgres_like
    ));
    let http = rules
        .iter()
        .find(|r| port_of(r) == Some(6632))
        .expect("an http rule");
    assert!(
        http.get("from").is_none(),
        "HTTP open to every source by default: {http}"
    );
    let limited = render::render(&[
        ("networkPolicy.enabled", "true"),
        (
            "networkPolicy.httpFrom[0].podSelector.matchLabels.role",
            "client",
        ),
    ]);
    let rules = limited.one("NetworkPolicy")["spec"]["ingress"].clone();
    assert_eq!(
        rules[0]["from"][0]["podSelector"]["matchLabels"]["role"],
        "client"
    );
}
