//! The identity provider's published keys (a JWKS), cached in memory.
//!
//! Keys are loaded at start-up (a failed fetch is logged, not fatal: the provider may come
//! up later) and again when a token names a `kid` the cache lacks, which is how a key
//! rotation reaches the broker, and in the background once the cache is older than
//! [`MAX_AGE`], so a key the provider withdrew stops verifying. Fetches are spaced by at
//! least [`MIN_REFRESH`], so tokens with made-up `kid`s cannot turn the broker into a
//! flood of requests to the provider. A key the crate cannot use (another key type, an
//! encryption key) is skipped, not fatal for the set.

use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use jsonwebtoken::jwk::{AlgorithmParameters, Jwk, PublicKeyUse};
use jsonwebtoken::DecodingKey;
use serde::Deserialize;
use serde_json::Value;
use tracing::{debug, warn};

use crate::config::JwksSource;

/// Least time between two loads: bounds what unknown `kid`s can cost the provider.
pub const MIN_REFRESH: Duration = Duration::from_secs(1);
/// Age past which the cache is loaded again in the background (withdrawn keys expire).
pub const MAX_AGE: Duration = Duration::from_secs(600);
/// How long one fetch may take before the cache stays as it was.
const FETCH_TIMEOUT: Duration = Duration::from_secs(5);
/// The largest JWKS document read; a key set is a few kilobytes.
const MAX_JWKS_BYTES: usize = 1024 * 1024;

/// The kind of key, which fixes the algorithms it may verify (no RSA key ever checks an
/// HMAC token: the crate refuses a key of another family too).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyFamily {
    /// RSA keys, for RS256.
    Rsa,
    /// Elliptic-curve keys, for ES256.
    Ec,
}

/// One usable key of the set.
#[derive(Clone)]
pub struct JwksKey {
    /// The key's `kid`, when it has one.
    pub kid: Option<String>,
    /// Its family.
    pub family: KeyFamily,
    /// The key itself.
    pub key: Arc<DecodingKey>,
}

/// Why the set could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum JwksError {
    /// The file could not be read.
    #[error("JWKS file {path} could not be read")]
    File {
        /// The file.
        path: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The URL did not answer with a document.
    #[error("JWKS could not be fetched from {url}: {reason}")]
    Fetch {
        /// The URL.
        url: String,
        /// What went wrong.
        reason: String,
    },
    /// The document is not a JWKS.
    #[error("JWKS is not a JSON object with a keys array")]
    Malformed,
}

/// The cached key set and how to load it again.
pub struct Jwks {
    source: JwksSource,
    http: reqwest::Client,
    cache: RwLock<Cache>,
    /// Held while loading, so concurrent misses cause one load.
    loading: tokio::sync::Mutex<Option<Instant>>,
}

#[derive(Default)]
struct Cache {
    keys: Vec<JwksKey>,
    loaded_at: Option<Instant>,
}

#[derive(Deserialize)]
struct RawSet {
    keys: Vec<Value>,
}

impl Jwks {
    /// An empty cache over `source`; [`Jwks::load`] fills it.
    pub fn new(source: JwksSource) -> Self {
        Jwks {
            source,
            http: reqwest::Client::new(),
            cache: RwLock::new(Cache::default()),
            loading: tokio::sync::Mutex::new(None),
        }
    }

    /// Loads the set now (start-up); answers how many usable keys it holds.
    pub async fn load(&self) -> Result<usize, JwksError> {
        let mut last = self.loading.lock().await;
        *last = Some(Instant::now());
        self.load_locked().await
    }

    /// The keys of `family` that may verify a token naming `kid` (every key of the family
    /// when the token names none). A miss loads the set again (spaced by [`MIN_REFRESH`]).
    pub async fn keys(self: &Arc<Self>, kid: Option<&str>, family: KeyFamily) -> Vec<JwksKey> {
        let (found, stale) = self.lookup(kid, family);
        if stale {
            let jwks = self.clone();
            tokio::spawn(async move { jwks.reload().await });
        }
        if !found.is_empty() {
            return found;
        }
        self.reload().await;
        self.lookup(kid, family).0
    }

    fn lookup(&self, kid: Option<&str>, family: KeyFamily) -> (Vec<JwksKey>, bool) {
        let cache = self.cache.read().expect("jwks lock");
        let found = cache
            .keys
            .iter()
            .filter(|k| k.family == family && (kid.is_none() || k.kid.as_deref() == kid))
            .cloned()
            .collect();
        let stale = cache.loaded_at.is_some_and(|at| at.elapsed() > MAX_AGE);
        (found, stale)
    }

    /// Loads the set again unless a load ran within [`MIN_REFRESH`].
    async fn reload(&self) {
        let mut last = self.loading.lock().await;
        if last.is_some_and(|at| at.elapsed() < MIN_REFRESH) {
            return;
        }
        *last = Some(Instant::now());
        if let Err(error) = self.load_locked().await {
            warn!(error = %error, "jwks reload failed; keeping the cached keys");
        }
    }

    async fn load_locked(&self) -> Result<usize, JwksError> {
        let document = match &self.source {
            JwksSource::File(path) => {
                tokio::fs::read(path)
                    .await
                    .map_err(|source| JwksError::File {
                        path: path.display().to_string(),
                        source,
                    })?
            }
            JwksSource::Url(url) => self.fetch(url).await?,
        };
        let keys = parse(&document)?;
        let count = keys.len();
        debug!(keys = count, "jwks loaded");
        *self.cache.write().expect("jwks lock") = Cache {
            keys,
            loaded_at: Some(Instant::now()),
        };
        Ok(count)
    }

    async fn fetch(&self, url: &str) -> Result<Vec<u8>, JwksError> {
        let failed = |reason: String| JwksError::Fetch {
            url: url.to_owned(),
            reason,
        };
        let answer = self
            .http
            .get(url)
            .timeout(FETCH_TIMEOUT)
            .send()
            .await
            .map_err(|e| failed(e.to_string()))?;
        if !answer.status().is_success() {
            return Err(failed(format!("HTTP {}", answer.status())));
        }
        let body = answer.bytes().await.map_err(|e| failed(e.to_string()))?;
        if body.len() > MAX_JWKS_BYTES {
            return Err(failed(format!("larger than {MAX_JWKS_BYTES} bytes")));
        }
        Ok(body.to_vec())
    }
}

/// The usable keys of a JWKS document: RSA and EC signature keys.
pub fn parse(document: &[u8]) -> Result<Vec<JwksKey>, JwksError> {
    let set: RawSet = serde_json::from_slice(document).map_err(|_| JwksError::Malformed)?;
    Ok(set
        .keys
        .into_iter()
        .filter_map(|raw| serde_json::from_value::<Jwk>(raw).ok())
        .filter(|jwk| !matches!(jwk.common.public_key_use, Some(PublicKeyUse::Encryption)))
        .filter_map(|jwk| {
            let family = match jwk.algorithm {
                AlgorithmParameters::RSA(_) => KeyFamily::Rsa,
                AlgorithmParameters::EllipticCurve(_) => KeyFamily::Ec,
                _ => return None,
            };
            let key = DecodingKey::from_jwk(&jwk).ok()?;
            Some(JwksKey {
                kid: jwk.common.key_id.clone(),
                family,
                key: Arc::new(key),
            })
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_set_keeps_its_signature_keys_and_skips_what_it_cannot_use() {
        let document = br#"{"keys":[
            {"kty":"EC","crv":"P-256","kid":"ec1","x":"f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU","y":"x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0"},
            {"kty":"oct","kid":"hmac","k":"c2VjcmV0"},
            {"kty":"RSA","kid":"enc","use":"enc","n":"AQAB","e":"AQAB"},
            {"kty":"nonsense"}
        ]}"#;
        let keys = parse(document).unwrap();
        assert_eq!(keys.len(), 1);
        assert_eq!(keys[0].kid.as_deref(), Some("ec1"));
        assert_eq!(keys[0].family, KeyFamily::Ec);
        assert!(matches!(parse(b"[]"), Err(JwksError::Malformed)));
        assert!(matches!(parse(b"not json"), Err(JwksError::Malformed)));
    }
}
