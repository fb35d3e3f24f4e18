//! Peer authentication: with a shared secret set, a dialler proves it knows the secret by
//! signing the acceptor's fresh nonce (HMAC-SHA256), so a recorded handshake cannot be
//! replayed and the secret never crosses the wire. Without a secret the proof is empty
//! and every peer of the same cluster name is accepted.

use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;

use crate::config::Secret;

type HmacSha256 = Hmac<Sha256>;

/// The proof a dialler sends for `nonce`.
pub fn prove(secret: Option<&Secret>, nonce: &[u8; 16], node_id: &str) -> Vec<u8> {
    match secret {
        None => Vec::new(),
        Some(secret) => mac(secret, nonce, node_id).finalize().into_bytes().to_vec(),
    }
}

/// True when `proof` is what a holder of the secret would send (constant-time compare).
pub fn verify(secret: Option<&Secret>, nonce: &[u8; 16], node_id: &str, proof: &[u8]) -> bool {
    match secret {
        None => true,
        Some(secret) => mac(secret, nonce, node_id).verify_slice(proof).is_ok(),
    }
}

fn mac(secret: &Secret, nonce: &[u8; 16], node_id: &str) -> HmacSha256 {
    // HMAC takes keys of any length; the constructor's error is for fixed-key MACs only.
    let mut mac = HmacSha256::new_from_slice(secret.expose().as_bytes())
        .expect("HMAC accepts a key of any length");
    mac.update(nonce);
    mac.update(node_id.as_bytes());
    mac
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_proof_verifies_only_with_the_same_secret_nonce_and_node() {
        let secret = Secret::new("s3cret");
        let proof = prove(Some(&secret), &[1; 16], "a");
        assert!(verify(Some(&secret), &[1; 16], "a", &proof));
        assert!(!verify(Some(&Secret::new("other")), &[1; 16], "a", &proof));
        assert!(!verify(Some(&secret), &[2; 16], "a", &proof));
        assert!(!verify(Some(&secret), &[1; 16], "b", &proof));
        assert!(!verify(Some(&secret), &[1; 16], "a", &[]));
    }

    #[test]
    fn without_a_secret_any_proof_is_accepted() {
        assert!(prove(None, &[1; 16], "a").is_empty());
        assert!(verify(None, &[1; 16], "a", b"whatever"));
    }
}
