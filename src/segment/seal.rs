//! Payload encryption at rest, for queues with `encryptionEnabled`: AES-256-GCM with a key
//! from the environment (`QUEEN_ENCRYPTION_KEY`).
//!
//! A sealed payload is `nonce (12 bytes) || ciphertext || tag (16 bytes)`, stored in place of
//! the JSON payload of a frame whose flag 4 is set. The message id is the associated data,
//! so a sealed payload moved into another message's frame fails to open. Payloads are
//! opened before any answer is rendered: clients never see flag 4.

use std::fmt;

use aes_gcm::aead::{Aead, AeadCore, KeyInit, OsRng, Payload};
use aes_gcm::{Aes256Gcm, Nonce};
use uuid::Uuid;

const NONCE_BYTES: usize = 12;
const TAG_BYTES: usize = 16;

/// The key payloads are sealed with. Its debug output is masked.
#[derive(Clone)]
pub struct PayloadKey {
    cipher: Aes256Gcm,
}

/// Why a key or a sealed payload was refused.
#[derive(Debug, thiserror::Error)]
pub enum SealError {
    /// The key is not 64 hexadecimal digits (32 bytes).
    #[error("the encryption key must be 64 hexadecimal digits (32 bytes)")]
    BadKey,
    /// The sealed payload is shorter than a nonce and a tag, or does not authenticate under
    /// this key and message id (a different key, or tampered bytes).
    #[error("an encrypted payload cannot be opened with this broker's key")]
    Unopenable,
}

impl fmt::Debug for PayloadKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("PayloadKey(***)")
    }
}

impl PayloadKey {
    /// Parses 64 hexadecimal digits (as `openssl rand -hex 32` prints).
    pub fn from_hex(hex: &str) -> Result<Self, SealError> {
        let hex = hex.trim().as_bytes();
        if hex.len() != 64 {
            return Err(SealError::BadKey);
        }
        let mut key = [0u8; 32];
        for (byte, pair) in key.iter_mut().zip(hex.chunks_exact(2)) {
            let text = std::str::from_utf8(pair).map_err(|_| SealError::BadKey)?;
            *byte = u8::from_str_radix(text, 16).map_err(|_| SealError::BadKey)?;
        }
        let cipher = Aes256Gcm::new_from_slice(&key).map_err(|_| SealError::BadKey)?;
        Ok(PayloadKey { cipher })
    }

    /// Seals a payload for the message `message_id` under a fresh random nonce.
    pub fn seal(&self, message_id: &Uuid, payload: &[u8]) -> Vec<u8> {
        let nonce = Aes256Gcm::generate_nonce(&mut OsRng);
        let sealed = self
            .cipher
            .encrypt(
                &nonce,
                Payload {
                    msg: payload,
                    aad: message_id.as_bytes(),
                },
            )
            .expect("AES-GCM encrypts any payload below 64 GiB");
        let mut out = Vec::with_capacity(NONCE_BYTES + sealed.len());
        out.extend_from_slice(&nonce);
        out.extend_from_slice(&sealed);
        out
    }

    /// Opens what [`PayloadKey::seal`] produced for the same message id.
    pub fn open(&self, message_id: &Uuid, sealed: &[u8]) -> Result<Vec<u8>, SealError> {
        if sealed.len() < NONCE_BYTES + TAG_BYTES {
            return Err(SealError::Unopenable);
        }
        let (nonce, body) = sealed.split_at(NONCE_BYTES);
        self.cipher
            .decrypt(
                Nonce::from_slice(nonce),
                Payload {
                    msg: body,
                    aad: message_id.as_bytes(),
                },
            )
            .map_err(|_| SealError::Unopenable)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &str = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f";

    #[test]
    fn a_sealed_payload_opens_only_with_the_same_key_and_message_id() {
        let key = PayloadKey::from_hex(KEY).unwrap();
        let id = Uuid::now_v7();
        let sealed = key.seal(&id, br#"{"card":"4111"}"#);
        assert!(!sealed.windows(4).any(|w| w == b"4111"), "plaintext leaked");
        assert_eq!(key.open(&id, &sealed).unwrap(), br#"{"card":"4111"}"#);
        assert!(key.open(&Uuid::now_v7(), &sealed).is_err());
        let other = PayloadKey::from_hex(&KEY.replace("00", "ff")).unwrap();
        assert!(other.open(&id, &sealed).is_err());
        let mut tampered = sealed.clone();
        *tampered.last_mut().unwrap() ^= 1;
        assert!(key.open(&id, &tampered).is_err());
        assert!(key.open(&id, &sealed[..20]).is_err());
    }

    #[test]
    fn two_seals_of_one_payload_differ_and_bad_keys_are_refused() {
        let key = PayloadKey::from_hex(KEY).unwrap();
        let id = Uuid::now_v7();
        assert_ne!(key.seal(&id, b"1"), key.seal(&id, b"1"));
        for bad in ["", "00", &KEY[..62], &format!("{}zz", &KEY[..62])] {
            assert!(PayloadKey::from_hex(bad).is_err(), "{bad}");
        }
        assert_eq!(format!("{key:?}"), "PayloadKey(***)");
    }
}
