//! Per-frame authentication after the handshake: with a shared secret, every frame a
//! dialler sends ends in a 16-byte tag, HMAC-SHA256 over the frame's sequence number and
//! payload under a key derived from the secret and both sides' handshake nonces.
//!
//! A third party on the path can therefore neither inject a frame (no key), replay one
//! (the sequence number moved on; another connection has another key) nor reorder or drop
//! one unnoticed (the next tag fails). The receiver closes the connection at the first bad
//! tag: the stream cannot be trusted after it. Without a secret frames carry no tag, as
//! before; [`Sealer`] and [`Opener`] then pass frames through.
//!
//! Cost: one HMAC of a few dozen bytes per hint on each side, from a keyed state cloned per
//! frame (`cargo bench --bench mesh_frames` measures it next to encoding the hint).

use bytes::{BufMut, Bytes, BytesMut};
use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;

use crate::config::Secret;

type HmacSha256 = Hmac<Sha256>;

/// Bytes of the tag appended to each frame: half of HMAC-SHA256, as RFC 2104 allows; 128
/// bits leave forgery out of reach while keeping hints small.
pub const TAG_BYTES: usize = 16;

/// Label of the key derivation, so the frame key can never equal a handshake proof.
const KEY_LABEL: &[u8] = b"queen mesh frames v1";

/// The frame key of one connection, or `None` without a secret.
pub fn frame_key(
    secret: Option<&Secret>,
    acceptor_nonce: &[u8; 16],
    dialler_nonce: &[u8; 16],
    dialler_node_id: &str,
) -> Option<FrameKey> {
    let secret = secret?;
    let mut kdf = HmacSha256::new_from_slice(secret.expose().as_bytes())
        .expect("HMAC accepts a key of any length");
    kdf.update(KEY_LABEL);
    kdf.update(acceptor_nonce);
    kdf.update(dialler_nonce);
    kdf.update(dialler_node_id.as_bytes());
    let key = kdf.finalize().into_bytes();
    Some(FrameKey(
        HmacSha256::new_from_slice(&key).expect("HMAC accepts a 32-byte key"),
    ))
}

/// A keyed HMAC state, cloned for each frame so the key schedule runs once per connection.
#[derive(Clone)]
pub struct FrameKey(HmacSha256);

impl FrameKey {
    fn tag(&self, seq: u64, payload: &[u8]) -> HmacSha256 {
        let mut mac = self.0.clone();
        mac.update(&seq.to_le_bytes());
        mac.update(payload);
        mac
    }
}

/// The sending side: appends the tag of the next sequence number.
pub struct Sealer {
    key: Option<FrameKey>,
    seq: u64,
}

impl Sealer {
    /// A sealer under `key` (a pass-through without one).
    pub fn new(key: Option<FrameKey>) -> Self {
        Sealer { key, seq: 0 }
    }

    /// The frame to send for `payload`.
    pub fn seal(&mut self, payload: &Bytes) -> Bytes {
        let Some(key) = &self.key else {
            return payload.clone();
        };
        let tag = key.tag(self.seq, payload).finalize().into_bytes();
        self.seq += 1;
        let mut out = BytesMut::with_capacity(payload.len() + TAG_BYTES);
        out.put_slice(payload);
        out.put_slice(&tag[..TAG_BYTES]);
        out.freeze()
    }
}

/// The receiving side: checks the tag of the next sequence number.
pub struct Opener {
    key: Option<FrameKey>,
    seq: u64,
}

impl Opener {
    /// An opener under `key` (a pass-through without one).
    pub fn new(key: Option<FrameKey>) -> Self {
        Opener { key, seq: 0 }
    }

    /// The payload of a frame whose tag is right (constant-time compare), else `None`.
    pub fn open<'a>(&mut self, frame: &'a [u8]) -> Option<&'a [u8]> {
        let Some(key) = &self.key else {
            return Some(frame);
        };
        let split = frame.len().checked_sub(TAG_BYTES)?;
        let (payload, tag) = frame.split_at(split);
        key.tag(self.seq, payload).verify_truncated_left(tag).ok()?;
        self.seq += 1;
        Some(payload)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pair(secret: &str, a: [u8; 16], d: [u8; 16]) -> (Sealer, Opener) {
        let secret = Secret::new(secret);
        (
            Sealer::new(frame_key(Some(&secret), &a, &d, "n")),
            Opener::new(frame_key(Some(&secret), &a, &d, "n")),
        )
    }

    #[test]
    fn sealed_frames_open_in_order_and_nothing_else_does() {
        let (mut sealer, mut opener) = pair("s", [1; 16], [2; 16]);
        let first = sealer.seal(&Bytes::from_static(b"hint one"));
        let second = sealer.seal(&Bytes::from_static(b"hint two"));
        assert_eq!(first.len(), 8 + TAG_BYTES);
        let mut skipping = Opener::new(opener.key.clone());
        assert!(skipping.open(&second).is_none(), "out of order");
        assert_eq!(opener.open(&first), Some(&b"hint one"[..]));
        assert!(opener.open(&first).is_none(), "a replay");
        assert_eq!(opener.open(&second), Some(&b"hint two"[..]));
    }

    #[test]
    fn a_frame_forged_tampered_or_from_another_connection_fails() {
        let (mut sealer, _) = pair("s", [1; 16], [2; 16]);
        let frame = sealer.seal(&Bytes::from_static(b"hint"));
        let (_, mut other_secret) = pair("t", [1; 16], [2; 16]);
        let (_, mut other_connection) = pair("s", [1; 16], [3; 16]);
        assert!(other_secret.open(&frame).is_none());
        assert!(other_connection.open(&frame).is_none());
        let (_, mut opener) = pair("s", [1; 16], [2; 16]);
        let mut tampered = frame.to_vec();
        tampered[0] ^= 1;
        assert!(opener.open(&tampered).is_none());
        assert!(opener.open(b"short").is_none());
        assert_eq!(opener.open(&frame), Some(&b"hint"[..]));
    }

    #[test]
    fn without_a_secret_frames_pass_untouched() {
        let mut sealer = Sealer::new(None);
        let mut opener = Opener::new(None);
        let frame = sealer.seal(&Bytes::from_static(b"x"));
        assert_eq!(&frame[..], b"x");
        assert_eq!(opener.open(&frame), Some(&b"x"[..]));
    }
}
