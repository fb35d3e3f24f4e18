//! The authentication section of the config: whether requests need a JWT, which keys
//! verify it, which claims it must carry, and which paths stay open (the probes).
//!
//! The `JWT_*` names are the ones Queen operators already use; the claim-name settings are
//! new and take the `QUEEN_` prefix. Verifying tokens is `crate::auth`'s job: this file only
//! reads and checks the settings, so a broker with auth on but no key refuses to start.

use std::path::PathBuf;
use std::time::Duration;

use super::{ConfigError, Secret, Vars};

/// The probes a kubelet or a Prometheus scraper calls without credentials.
pub const DEFAULT_SKIP_PATHS: &str =
    "/health,/health/live,/health/ready,/metrics,/metrics/prometheus";

/// JWT authentication (off unless `JWT_ENABLED`).
#[derive(Debug, Clone)]
pub struct AuthConfig {
    /// `JWT_ENABLED` (default false): every request outside the skip paths needs a valid
    /// bearer token and the role its route asks for.
    pub enabled: bool,
    /// `JWT_ALGORITHM`: `HS256`, `RS256`, `ES256`, or `auto` (default `HS256`; `auto` takes
    /// whichever of the three the token's header names and a configured key can verify).
    pub algorithm: JwtAlgorithm,
    /// `JWT_SECRET`: the HMAC key of HS256 tokens (masked in logs).
    pub secret: Option<Secret>,
    /// `JWT_PUBLIC_KEY`: an RSA or EC public key in PEM (the PEM text, or a file holding it).
    pub public_key: Option<String>,
    /// `JWT_JWKS_URL`: where the identity provider publishes its keys (an `http://` URL,
    /// fetched and cached, fetched again when a token names an unknown `kid`), or a JWKS
    /// file for clusters without an identity provider.
    pub jwks: Option<JwksSource>,
    /// `JWT_ISSUER`: when set, the `iss` claim must equal it.
    pub issuer: Option<String>,
    /// `JWT_AUDIENCE`: when set, the `aud` claim must contain it.
    pub audience: Option<String>,
    /// `JWT_CLOCK_SKEW` (seconds, default 30): leeway on `exp` and `nbf` for clocks apart.
    pub clock_skew: Duration,
    /// `JWT_SKIP_PATHS`: comma-separated paths served without a token (default: the health
    /// and metrics probes); an entry ending in `*` is a prefix.
    pub skip_paths: Vec<String>,
    /// `QUEEN_JWT_ROLE_CLAIM` (default `role`): the claim holding one role name.
    pub role_claim: String,
    /// `QUEEN_JWT_ROLES_CLAIM` (default `roles`): the claim holding an array of role names.
    pub roles_claim: String,
    /// `QUEEN_JWT_TENANT_CLAIM` (default `tenant`): the claim naming the caller's tenant.
    pub tenant_claim: String,
    /// `QUEEN_JWT_REQUIRE_TENANT` (default false): a token without the tenant claim is
    /// refused (403) instead of acting in the default tenant, so a token minted without
    /// one can never reach the shared default tenant of a multi-tenant deployment.
    pub require_tenant: bool,
}

/// Which signature algorithms a token may use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JwtAlgorithm {
    /// HMAC-SHA256 with `JWT_SECRET`.
    Hs256,
    /// RSA PKCS#1 v1.5 with SHA-256, with `JWT_PUBLIC_KEY` or the JWKS.
    Rs256,
    /// ECDSA P-256 with SHA-256, with `JWT_PUBLIC_KEY` or the JWKS.
    Es256,
    /// Any of the three, as the token's header says, with the key of that kind.
    Auto,
}

/// Where the JWKS comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JwksSource {
    /// Fetched over HTTP.
    Url(String),
    /// Read from a file.
    File(PathBuf),
}

/// Reads the authentication section; with auth on, refuses a configuration that could
/// verify no token of the chosen algorithm.
pub(super) fn auth_config(vars: &Vars) -> Result<AuthConfig, ConfigError> {
    let enabled = vars.flag("JWT_ENABLED", false)?;
    let algorithm = match vars
        .get("JWT_ALGORITHM")
        .map(str::to_ascii_uppercase)
        .as_deref()
    {
        None | Some("HS256") => JwtAlgorithm::Hs256,
        Some("RS256") => JwtAlgorithm::Rs256,
        Some("ES256") => JwtAlgorithm::Es256,
        Some("AUTO") => JwtAlgorithm::Auto,
        Some(_) => {
            return Err(ConfigError::Invalid {
                name: "JWT_ALGORITHM",
                value: vars.get("JWT_ALGORITHM").unwrap_or_default().to_owned(),
                rule: "HS256, RS256, ES256 or auto",
            })
        }
    };
    let jwks = match vars.get("JWT_JWKS_URL").map(str::trim) {
        None => None,
        // The HTTP client is built without TLS: refuse at start-up rather than fail every
        // token later. An https provider's set can be mirrored to a file or a local URL.
        Some(raw) if raw.starts_with("https://") => {
            return Err(ConfigError::Invalid {
                name: "JWT_JWKS_URL",
                value: raw.to_owned(),
                rule: "an http:// URL or a file path (https is not supported yet)",
            })
        }
        Some(raw) if raw.starts_with("http://") => Some(JwksSource::Url(raw.to_owned())),
        Some(raw) => Some(JwksSource::File(PathBuf::from(
            raw.strip_prefix("file://").unwrap_or(raw),
        ))),
    };
    let skip_paths = vars
        .get("JWT_SKIP_PATHS")
        .unwrap_or(DEFAULT_SKIP_PATHS)
        .split(',')
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .map(str::to_owned)
        .collect();
    let config = AuthConfig {
        enabled,
        algorithm,
        secret: vars.get("JWT_SECRET").map(Secret::new),
        public_key: vars.get("JWT_PUBLIC_KEY").map(str::to_owned),
        jwks,
        issuer: vars.get("JWT_ISSUER").map(str::to_owned),
        audience: vars.get("JWT_AUDIENCE").map(str::to_owned),
        clock_skew: Duration::from_secs(vars.parse("JWT_CLOCK_SKEW", 30, "whole seconds")?),
        skip_paths,
        role_claim: vars
            .get("QUEEN_JWT_ROLE_CLAIM")
            .unwrap_or("role")
            .to_owned(),
        roles_claim: vars
            .get("QUEEN_JWT_ROLES_CLAIM")
            .unwrap_or("roles")
            .to_owned(),
        tenant_claim: vars
            .get("QUEEN_JWT_TENANT_CLAIM")
            .unwrap_or("tenant")
            .to_owned(),
        require_tenant: vars.flag("QUEEN_JWT_REQUIRE_TENANT", false)?,
    };
    if enabled {
        check_keys(&config)?;
    }
    Ok(config)
}

/// With auth on, the chosen algorithm needs its key: a secret for HS256, a public key or
/// a JWKS for RS256 and ES256, at least one of them for `auto`.
fn check_keys(config: &AuthConfig) -> Result<(), ConfigError> {
    let hmac = config.secret.is_some();
    let public = config.public_key.is_some() || config.jwks.is_some();
    let (ok, rule) = match config.algorithm {
        JwtAlgorithm::Hs256 => (hmac, "HS256 needs JWT_SECRET"),
        JwtAlgorithm::Rs256 | JwtAlgorithm::Es256 => (
            public,
            "RS256 and ES256 need JWT_PUBLIC_KEY or JWT_JWKS_URL",
        ),
        JwtAlgorithm::Auto => (
            hmac || public,
            "auto needs JWT_SECRET, JWT_PUBLIC_KEY or JWT_JWKS_URL",
        ),
    };
    if ok {
        return Ok(());
    }
    Err(ConfigError::Invalid {
        name: "JWT_ENABLED",
        value: "true".to_owned(),
        rule,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;

    #[test]
    fn auth_is_off_by_default_and_the_probes_are_skipped() {
        let config = Config::from_vars(Vec::<(String, String)>::new()).unwrap();
        assert!(!config.auth.enabled);
        assert_eq!(config.auth.clock_skew, Duration::from_secs(30));
        assert!(config.auth.skip_paths.contains(&"/health/ready".to_owned()));
        assert!(config.auth.skip_paths.contains(&"/metrics".to_owned()));
        assert_eq!(config.auth.role_claim, "role");
        assert_eq!(config.auth.tenant_claim, "tenant");
        assert!(!config.auth.require_tenant);
    }

    #[test]
    fn auth_on_without_a_key_for_its_algorithm_is_refused_by_name() {
        for vars in [
            vec![("JWT_ENABLED", "true")],
            vec![
                ("JWT_ENABLED", "true"),
                ("JWT_ALGORITHM", "RS256"),
                ("JWT_SECRET", "s"),
            ],
            vec![("JWT_ENABLED", "1"), ("JWT_ALGORITHM", "auto")],
        ] {
            let err = Config::from_vars(vars.clone()).unwrap_err().to_string();
            assert!(err.contains("JWT_ENABLED"), "{vars:?}: {err}");
        }
        assert!(Config::from_vars([("JWT_ALGORITHM", "none")]).is_err());
    }

    #[test]
    fn a_jwks_setting_is_a_url_or_a_file_and_the_secret_is_masked() {
        let config = Config::from_vars([
            ("JWT_ENABLED", "true"),
            ("JWT_ALGORITHM", "es256"),
            ("JWT_JWKS_URL", "http://idp.local/jwks.json"),
            ("JWT_SECRET", "hunter2"),
            ("JWT_SKIP_PATHS", "/health, /console/*"),
        ])
        .unwrap();
        assert_eq!(config.auth.algorithm, JwtAlgorithm::Es256);
        assert_eq!(
            config.auth.jwks,
            Some(JwksSource::Url("http://idp.local/jwks.json".into()))
        );
        assert_eq!(config.auth.skip_paths, ["/health", "/console/*"]);
        assert!(!format!("{config:?}").contains("hunter2"));
        let https = Config::from_vars([("JWT_JWKS_URL", "https://idp/jwks.json")]).unwrap_err();
        assert!(https.to_string().contains("JWT_JWKS_URL"), "{https}");
        let file = Config::from_vars([("JWT_JWKS_URL", "/etc/queen/jwks.json")]).unwrap();
        assert_eq!(
            file.auth.jwks,
            Some(JwksSource::File("/etc/queen/jwks.json".into()))
        );
    }
}
