//! Checking a bearer token: which key may verify it, the `jsonwebtoken` crate's signature
//! and claim checks (expiry and not-before within the clock skew, issuer, audience), then
//! the caller's subject and roles from its claims.
//!
//! An HMAC token is only ever checked with `JWT_SECRET`, an RSA or EC token only with a
//! public key of that family: a public key can never be used as an HMAC secret.

use std::path::Path;
use std::sync::Arc;

use jsonwebtoken::{decode, decode_header, Algorithm, DecodingKey, Validation};
use serde_json::{Map, Value};

use super::jwks::{Jwks, JwksError, KeyFamily};
use super::Role;
use crate::config::{AuthConfig, JwtAlgorithm};
use crate::domain::Tenant;

/// Who a verified token speaks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    /// The `sub` claim: stamped on every message this caller pushes.
    pub sub: Option<Arc<str>>,
    /// The most trusted role the token grants, if any.
    pub role: Option<Role>,
    /// What the token's tenant claim (`QUEEN_JWT_TENANT_CLAIM`) says.
    pub tenant: TenantClaim,
}

/// The tenant a verified token names. Turning it into the request's tenant (or a 403) is
/// the gate's job, which knows whether the claim is required.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TenantClaim {
    /// The token has no such claim.
    Absent,
    /// A valid tenant name.
    Named(Tenant),
    /// The claim is not a string or not a valid name; why, for the 403's text.
    Invalid(String),
}

/// Why a request carries no usable identity (both answer 401).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AuthFailure {
    /// No `Authorization` header, or an empty one.
    #[error("missing bearer token")]
    Missing,
    /// The token did not verify; the reason is for the log, not the client.
    #[error("invalid token: {0}")]
    Invalid(String),
}

/// Why the configured keys could not be used at start-up.
#[derive(Debug, thiserror::Error)]
pub enum AuthSetupError {
    /// `JWT_PUBLIC_KEY` names a file that could not be read.
    #[error("JWT_PUBLIC_KEY file {path} could not be read")]
    PublicKeyFile {
        /// The file.
        path: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// `JWT_PUBLIC_KEY` is neither an RSA nor an EC public key in PEM.
    #[error("JWT_PUBLIC_KEY is not an RSA or EC public key in PEM")]
    PublicKey,
    /// A `JWT_JWKS_URL` file could not be loaded (a URL that fails is retried instead).
    #[error("JWT_JWKS_URL could not be loaded")]
    Jwks(#[from] JwksError),
}

/// Verifies tokens with the configured keys.
pub struct Verifier {
    algorithm: JwtAlgorithm,
    hmac: Option<DecodingKey>,
    public: Option<(KeyFamily, DecodingKey)>,
    jwks: Option<Arc<Jwks>>,
    issuer: Option<String>,
    audience: Option<String>,
    leeway: u64,
    role_claim: String,
    roles_claim: String,
    tenant_claim: String,
}

impl Verifier {
    /// The verifier of `config`, with its keys parsed and its JWKS loaded (a JWKS file must
    /// load; a URL that does not answer yet is only logged).
    pub async fn new(config: &AuthConfig) -> Result<Self, AuthSetupError> {
        let public = match &config.public_key {
            None => None,
            Some(value) => Some(public_key(value)?),
        };
        let jwks = match &config.jwks {
            None => None,
            Some(source) => {
                let jwks = Arc::new(Jwks::new(source.clone()));
                match (jwks.load().await, source) {
                    (Ok(_), _) => {}
                    (Err(error), crate::config::JwksSource::File(_)) => return Err(error.into()),
                    (Err(error), crate::config::JwksSource::Url(_)) => {
                        tracing::warn!(error = %error, "jwks not loaded at start-up; retried on use");
                    }
                }
                Some(jwks)
            }
        };
        Ok(Verifier {
            algorithm: config.algorithm,
            hmac: config
                .secret
                .as_ref()
                .map(|s| DecodingKey::from_secret(s.expose().as_bytes())),
            public,
            jwks,
            issuer: config.issuer.clone(),
            audience: config.audience.clone(),
            leeway: config.clock_skew.as_secs(),
            role_claim: config.role_claim.clone(),
            roles_claim: config.roles_claim.clone(),
            tenant_claim: config.tenant_claim.clone(),
        })
    }

    /// The identity `token` proves, or why it proves none.
    pub async fn verify(&self, token: &str) -> Result<Identity, AuthFailure> {
        let invalid = |why: &str| AuthFailure::Invalid(why.to_owned());
        let header = decode_header(token).map_err(|_| invalid("malformed token"))?;
        let allowed = match self.algorithm {
            JwtAlgorithm::Hs256 => header.alg == Algorithm::HS256,
            JwtAlgorithm::Rs256 => header.alg == Algorithm::RS256,
            JwtAlgorithm::Es256 => header.alg == Algorithm::ES256,
            JwtAlgorithm::Auto => matches!(
                header.alg,
                Algorithm::HS256 | Algorithm::RS256 | Algorithm::ES256
            ),
        };
        if !allowed {
            return Err(invalid("algorithm not accepted"));
        }
        let validation = self.validation(header.alg);
        let family = match header.alg {
            Algorithm::HS256 => {
                let key = self.hmac.as_ref().ok_or_else(|| invalid("no HMAC key"))?;
                return self.claims(token, key, &validation);
            }
            Algorithm::RS256 => KeyFamily::Rsa,
            _ => KeyFamily::Ec,
        };
        // A named key from the set first; the configured public key otherwise.
        let mut last = invalid("no key for this token");
        if let Some(jwks) = &self.jwks {
            for candidate in jwks.keys(header.kid.as_deref(), family).await {
                match self.claims(token, &candidate.key, &validation) {
                    Ok(identity) => return Ok(identity),
                    Err(failure) => last = failure,
                }
            }
        }
        if let Some((key_family, key)) = &self.public {
            if *key_family == family {
                return self.claims(token, key, &validation);
            }
        }
        Err(last)
    }

    fn validation(&self, alg: Algorithm) -> Validation {
        let mut validation = Validation::new(alg);
        validation.leeway = self.leeway;
        validation.validate_nbf = true;
        match &self.issuer {
            Some(issuer) => validation.set_issuer(&[issuer]),
            None => validation.iss = None,
        }
        match &self.audience {
            Some(audience) => validation.set_audience(&[audience]),
            None => validation.validate_aud = false,
        }
        validation
    }

    fn claims(
        &self,
        token: &str,
        key: &DecodingKey,
        validation: &Validation,
    ) -> Result<Identity, AuthFailure> {
        let data = decode::<Map<String, Value>>(token, key, validation)
            .map_err(|e| AuthFailure::Invalid(e.to_string()))?;
        let mut identity = identity(&data.claims, &self.role_claim, &self.roles_claim);
        identity.tenant = tenant_claim(&data.claims, &self.tenant_claim);
        Ok(identity)
    }
}

/// The subject and the most trusted known role of verified claims. Either claim may hold
/// one role name or an array of them; names of other systems' roles grant nothing.
fn identity(claims: &Map<String, Value>, role_claim: &str, roles_claim: &str) -> Identity {
    let names = [role_claim, roles_claim]
        .into_iter()
        .filter_map(|name| claims.get(name))
        .flat_map(|value| match value {
            Value::String(s) => vec![s.as_str()],
            Value::Array(items) => items.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        });
    Identity {
        sub: claims.get("sub").and_then(Value::as_str).map(Arc::from),
        role: names.filter_map(Role::parse).max(),
        tenant: TenantClaim::Absent,
    }
}

/// The tenant named by the `claim` of verified claims: a string that is a valid name, or
/// why it is not one.
fn tenant_claim(claims: &Map<String, Value>, claim: &str) -> TenantClaim {
    match claims.get(claim) {
        None | Some(Value::Null) => TenantClaim::Absent,
        Some(Value::String(name)) => match Tenant::parse(name.as_str()) {
            Ok(tenant) => TenantClaim::Named(tenant),
            Err(e) => TenantClaim::Invalid(format!("the token's {claim} claim: {e}")),
        },
        Some(_) => TenantClaim::Invalid(format!("the token's {claim} claim must be a string")),
    }
}

/// `JWT_PUBLIC_KEY`: PEM text, or the path of a file holding it; RSA or EC.
fn public_key(value: &str) -> Result<(KeyFamily, DecodingKey), AuthSetupError> {
    let pem = if value.trim_start().starts_with("-----BEGIN") {
        value.to_owned()
    } else {
        std::fs::read_to_string(Path::new(value.trim())).map_err(|source| {
            AuthSetupError::PublicKeyFile {
                path: value.trim().to_owned(),
                source,
            }
        })?
    };
    // Environment files often carry a PEM with its line breaks written as `\n`.
    let pem = pem.replace("\\n", "\n");
    if let Ok(key) = DecodingKey::from_rsa_pem(pem.as_bytes()) {
        return Ok((KeyFamily::Rsa, key));
    }
    DecodingKey::from_ec_pem(pem.as_bytes())
        .map(|key| (KeyFamily::Ec, key))
        .map_err(|_| AuthSetupError::PublicKey)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_most_trusted_known_role_of_either_claim_wins() {
        let claims = |v: Value| v.as_object().unwrap().clone();
        let id = identity(
            &claims(json!({"sub": "alice", "role": "read-only", "roles": ["x", "admin"]})),
            "role",
            "roles",
        );
        assert_eq!(id.sub.as_deref(), Some("alice"));
        assert_eq!(id.role, Some(Role::Admin));
        let id = identity(
            &claims(json!({"perms": ["read-write"], "role": 7})),
            "role",
            "perms",
        );
        assert_eq!((id.sub, id.role), (None, Some(Role::ReadWrite)));
        assert_eq!(
            identity(&claims(json!({"roles": "guest"})), "role", "roles").role,
            None
        );
    }

    #[test]
    fn the_tenant_claim_names_a_valid_tenant_or_says_why_not() {
        let claims = |v: Value| v.as_object().unwrap().clone();
        assert_eq!(
            tenant_claim(&claims(json!({"org": "acme"})), "org"),
            TenantClaim::Named(Tenant::parse("acme").unwrap())
        );
        assert_eq!(
            tenant_claim(&claims(json!({"tenant": "acme"})), "org"),
            TenantClaim::Absent
        );
        for bad in [json!(""), json!("a/b"), json!(7), json!(["acme"])] {
            let got = tenant_claim(&claims(json!({ "tenant": bad })), "tenant");
            assert!(matches!(got, TenantClaim::Invalid(_)), "{bad}: {got:?}");
        }
    }

    #[test]
    fn a_public_key_that_is_not_pem_is_refused() {
        assert!(matches!(
            public_key("-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----"),
            Err(AuthSetupError::PublicKey)
        ));
        assert!(matches!(
            public_key("/no/such/key.pem"),
            Err(AuthSetupError::PublicKeyFile { .. })
        ));
    }
}
