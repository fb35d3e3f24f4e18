//! Real keys and real signed tokens for the authentication tests: RSA and P-256 key pairs
//! made by the `openssl` command in a temporary folder, tokens signed with the
//! `jsonwebtoken` crate, and the JWKS entries of the public keys.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{SystemTime, UNIX_EPOCH};

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use jsonwebtoken::{encode, Algorithm, EncodingKey, Header};
use serde_json::{json, Value};

/// The HMAC secret the HS256 tests share.
pub const SECRET: &str = "a-test-secret-of-some-length-0123456789";

/// A key pair made by `openssl`, kept in a temporary folder while it lives.
pub struct KeyPair {
    /// The private key, PKCS#8 PEM (what `EncodingKey` reads).
    pub private_pem: Vec<u8>,
    /// The public key, SPKI PEM (what `JWT_PUBLIC_KEY` takes).
    pub public_pem: String,
    /// Where the public key file is (for `JWT_PUBLIC_KEY` given as a path).
    pub public_path: PathBuf,
    /// The public key as a JWKS entry (without `kid`).
    pub jwk: Value,
    alg: Algorithm,
    _dir: tempfile::TempDir,
}

impl KeyPair {
    /// A fresh 2048-bit RSA key pair.
    pub fn rsa() -> Self {
        let dir = tempfile::tempdir().expect("a temporary folder");
        let private = dir.path().join("private.pem");
        let public = dir.path().join("public.pem");
        openssl(
            &[
                "genpkey",
                "-algorithm",
                "RSA",
                "-pkeyopt",
                "rsa_keygen_bits:2048",
                "-out",
            ],
            &private,
        );
        openssl_pub(&private, &public);
        let modulus = openssl_text(&["rsa", "-pubin", "-noout", "-modulus", "-in"], &public);
        let hex = modulus.trim().trim_start_matches("Modulus=");
        let n = decode_hex(hex);
        let jwk = json!({
            "kty": "RSA", "use": "sig", "alg": "RS256",
            "n": URL_SAFE_NO_PAD.encode(n), "e": URL_SAFE_NO_PAD.encode([1u8, 0, 1]),
        });
        Self::finish(dir, private, public, jwk, Algorithm::RS256)
    }

    /// A fresh P-256 key pair.
    pub fn ec() -> Self {
        let dir = tempfile::tempdir().expect("a temporary folder");
        let private = dir.path().join("private.pem");
        let public = dir.path().join("public.pem");
        openssl(
            &[
                "genpkey",
                "-algorithm",
                "EC",
                "-pkeyopt",
                "ec_paramgen_curve:P-256",
                "-out",
            ],
            &private,
        );
        openssl_pub(&private, &public);
        // The uncompressed point follows "pub:" as colon-separated hex: 04 || x || y.
        let text = openssl_text(&["pkey", "-pubin", "-noout", "-text", "-in"], &public);
        let after = text.split("pub:").nth(1).expect("openssl prints the point");
        let hex: String = after
            .lines()
            .skip(1)
            .take_while(|l| l.starts_with(' '))
            .flat_map(|l| l.trim().split(':'))
            .collect();
        let point = decode_hex(&hex);
        assert_eq!(point.len(), 65, "an uncompressed P-256 point");
        let jwk = json!({
            "kty": "EC", "crv": "P-256", "use": "sig", "alg": "ES256",
            "x": URL_SAFE_NO_PAD.encode(&point[1..33]), "y": URL_SAFE_NO_PAD.encode(&point[33..]),
        });
        Self::finish(dir, private, public, jwk, Algorithm::ES256)
    }

    fn finish(
        dir: tempfile::TempDir,
        private: PathBuf,
        public: PathBuf,
        jwk: Value,
        alg: Algorithm,
    ) -> Self {
        KeyPair {
            private_pem: std::fs::read(&private).expect("read the private key"),
            public_pem: std::fs::read_to_string(&public).expect("read the public key"),
            public_path: public,
            jwk,
            alg,
            _dir: dir,
        }
    }

    /// The JWKS entry of this key under `kid`.
    pub fn jwk_with_kid(&self, kid: &str) -> Value {
        let mut jwk = self.jwk.clone();
        jwk["kid"] = json!(kid);
        jwk
    }

    /// A token with `claims`, signed by this key, naming `kid` when given.
    pub fn sign(&self, claims: &Value, kid: Option<&str>) -> String {
        let key = match self.alg {
            Algorithm::RS256 => EncodingKey::from_rsa_pem(&self.private_pem),
            _ => EncodingKey::from_ec_pem(&self.private_pem),
        }
        .expect("the private key loads");
        let mut header = Header::new(self.alg);
        header.kid = kid.map(str::to_owned);
        encode(&header, claims, &key).expect("the token signs")
    }
}

/// An HS256 token with `claims` under `secret`.
pub fn hs256(secret: &str, claims: &Value) -> String {
    encode(
        &Header::new(Algorithm::HS256),
        claims,
        &EncodingKey::from_secret(secret.as_bytes()),
    )
    .expect("the token signs")
}

/// Claims for `sub` granting `role`, valid for ten minutes.
pub fn claims(sub: &str, role: &str) -> Value {
    json!({ "sub": sub, "role": role, "exp": now() + 600, "iat": now() })
}

/// Seconds since the epoch.
pub fn now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("the clock is past 1970")
        .as_secs() as i64
}

fn openssl(args: &[&str], out: &Path) {
    let status = Command::new("openssl")
        .args(args)
        .arg(out)
        .output()
        .expect("the openssl command runs (apt-get install openssl)");
    assert!(
        status.status.success(),
        "openssl {args:?}: {}",
        String::from_utf8_lossy(&status.stderr)
    );
}

fn openssl_pub(private: &Path, public: &Path) {
    let status = Command::new("openssl")
        .args(["pkey", "-pubout", "-in"])
        .arg(private)
        .arg("-out")
        .arg(public)
        .output()
        .expect("the openssl command runs");
    assert!(
        status.status.success(),
        "{}",
        String::from_utf8_lossy(&status.stderr)
    );
}

fn openssl_text(args: &[&str], input: &Path) -> String {
    let output = Command::new("openssl")
        .args(args)
        .arg(input)
        .output()
        .expect("the openssl command runs");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).expect("openssl prints text")
}

fn decode_hex(hex: &str) -> Vec<u8> {
    let hex: String = hex.chars().filter(|c| c.is_ascii_hexdigit()).collect();
    (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).expect("hex digits"))
        .collect()
}
