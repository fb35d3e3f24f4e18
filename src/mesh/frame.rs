//! Framing: a 4-byte big-endian length, then one msgpack-encoded [`MeshMessage`].
//!
//! The length codec is tokio-util's; this file only fixes its limits and turns bytes into
//! messages, so a reader and a writer cannot disagree on the layout.

use bytes::Bytes;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio_util::codec::{FramedRead, FramedWrite, LengthDelimitedCodec};

use super::message::MeshMessage;

/// The largest frame a node accepts. Hints are a few dozen bytes; anything near this is
/// garbage or an attack, and the connection is closed (a lying length cannot be skipped).
pub const MAX_FRAME_BYTES: usize = 64 * 1024;

/// The largest frame once the handshake has passed: a forwarded ephemeral push or a pop's
/// answer (`super::message::EphemeralCall`) carries messages, not a hint. Raised on the
/// dialler's writer and the acceptor's reader only after the handshake, so a stranger
/// still meets [`MAX_FRAME_BYTES`].
pub const MAX_CALL_FRAME_BYTES: usize = 4 << 20;

/// Why a frame was not a message.
#[derive(Debug, thiserror::Error)]
pub enum FrameError {
    /// The length prefix announced more than [`MAX_FRAME_BYTES`], or the socket failed.
    #[error("mesh stream broken")]
    Stream(#[source] std::io::Error),
    /// The frame's bytes are not a msgpack [`MeshMessage`].
    #[error("malformed mesh message")]
    Malformed(#[source] rmp_serde::decode::Error),
}

/// The codec both ends use.
pub fn codec() -> LengthDelimitedCodec {
    LengthDelimitedCodec::builder()
        .length_field_length(4)
        .max_frame_length(MAX_FRAME_BYTES)
        .new_codec()
}

/// Frames read from a socket half.
pub fn reader<R: AsyncRead>(io: R) -> FramedRead<R, LengthDelimitedCodec> {
    FramedRead::new(io, codec())
}

/// Frames written to a socket half.
pub fn writer<W: AsyncWrite>(io: W) -> FramedWrite<W, LengthDelimitedCodec> {
    FramedWrite::new(io, codec())
}

/// A message as frame payload.
pub fn encode(message: &MeshMessage) -> Bytes {
    // Encoding our own enum into a Vec cannot fail: every field is a plain value.
    Bytes::from(rmp_serde::to_vec(message).expect("mesh messages always encode"))
}

/// A frame payload as a message.
pub fn decode(frame: &[u8]) -> Result<MeshMessage, FrameError> {
    rmp_serde::from_slice(frame).map_err(FrameError::Malformed)
}

#[cfg(test)]
mod tests {
    use futures_util::{SinkExt, StreamExt};

    use super::*;

    #[tokio::test]
    async fn a_message_written_is_the_message_read() {
        let (a, b) = tokio::io::duplex(1024);
        let mut out = writer(a);
        let mut input = reader(b);
        out.send(encode(&MeshMessage::MaintenanceChanged { pop: true }))
            .await
            .unwrap();
        let frame = input.next().await.unwrap().unwrap();
        assert_eq!(
            decode(&frame).unwrap(),
            MeshMessage::MaintenanceChanged { pop: true }
        );
    }

    #[tokio::test]
    async fn a_length_prefix_over_the_limit_breaks_the_stream() {
        use tokio::io::AsyncWriteExt;
        let (mut a, b) = tokio::io::duplex(1024);
        a.write_all(&(MAX_FRAME_BYTES as u32 + 1).to_be_bytes())
            .await
            .unwrap();
        let mut input = reader(b);
        assert!(input.next().await.unwrap().is_err());
    }

    #[test]
    fn junk_bytes_are_malformed_not_a_panic() {
        for junk in [&b""[..], b"\xff\xff\xff", b"hello world", &[0x92, 0x01]] {
            assert!(matches!(decode(junk), Err(FrameError::Malformed(_))));
        }
    }
}
