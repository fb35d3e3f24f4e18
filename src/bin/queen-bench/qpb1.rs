//! The `QPB1` push body as the published client sends it with binary push and compression
//! (wire contract §2.2, flag 8): client-minted UUIDv7 ids, the id's text as the transaction
//! id, and each (queue, partition) group's stored frames as one zstd frame with its content
//! size recorded.
//!
//! Encoding only; sending the body and reading the answer stay in `broker`.

use uuid::Uuid;

/// Flag 8: groups carry stored frames, zstd-compressed per group.
pub const FLAG_FRAMES: u8 = 8;

/// zstd level of each group: 3, zstd's own default and what a client library that does not
/// choose one gets (the broker stores the bytes as they are, so this is the stored level too).
const ZSTD_LEVEL: i32 = 3;

/// Bytes of a stored frame before its payload: flags (1), message id (16), u16 length and the
/// 36-character text of the id as transaction id.
const FRAME_HEAD: usize = 1 + 16 + 2 + 36;

/// Builds flag-8 bodies, reusing its buffers from one push to the next.
#[derive(Debug, Default)]
pub struct Encoder {
    frames: Vec<u8>,
}

impl Encoder {
    /// One body with a single group: `payloads` for `partition` of `queue`, in order, each
    /// under a fresh UUIDv7 whose text is also its transaction id.
    pub fn body<'a>(
        &mut self,
        queue: &str,
        partition: &str,
        payloads: impl ExactSizeIterator<Item = &'a [u8]>,
    ) -> anyhow::Result<Vec<u8>> {
        let n = u32::try_from(payloads.len())?;
        self.frames.clear();
        for payload in payloads {
            push_frame(&mut self.frames, Uuid::now_v7(), payload)?;
        }
        // bulk::compress pledges the input size, so the frame header records it.
        let z = zstd::bulk::compress(&self.frames, ZSTD_LEVEL)?;
        let mut body =
            Vec::with_capacity(4 + 1 + 4 + 4 + queue.len() + partition.len() + 8 + z.len());
        body.extend_from_slice(b"QPB1");
        body.push(FLAG_FRAMES);
        body.extend_from_slice(&1u32.to_le_bytes());
        put_str16(&mut body, queue)?;
        put_str16(&mut body, partition)?;
        body.extend_from_slice(&n.to_le_bytes());
        body.extend_from_slice(&u32::try_from(z.len())?.to_le_bytes());
        body.extend_from_slice(&z);
        Ok(body)
    }
}

/// Appends one client-made stored frame: flags 0, `id`, the id's text as transaction id, and
/// the payload.
fn push_frame(out: &mut Vec<u8>, id: Uuid, payload: &[u8]) -> anyhow::Result<()> {
    let body_len = u32::try_from(FRAME_HEAD + payload.len())?;
    out.extend_from_slice(&body_len.to_le_bytes());
    out.push(0);
    out.extend_from_slice(id.as_bytes());
    let mut text = Uuid::encode_buffer();
    put_str16(out, id.hyphenated().encode_lower(&mut text))?;
    out.extend_from_slice(payload);
    Ok(())
}

fn put_str16(out: &mut Vec<u8>, s: &str) -> anyhow::Result<()> {
    out.extend_from_slice(&u16::try_from(s.len())?.to_le_bytes());
    out.extend_from_slice(s.as_bytes());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn u16_at(b: &[u8], at: usize) -> usize {
        u16::from_le_bytes([b[at], b[at + 1]]) as usize
    }

    fn u32_at(b: &[u8], at: usize) -> usize {
        u32::from_le_bytes(b[at..at + 4].try_into().unwrap()) as usize
    }

    #[test]
    fn a_body_is_one_flag_8_group_of_client_minted_frames_in_order() {
        let payloads: Vec<&[u8]> = vec![br#"{"seq":1}"#, br#"{"seq":2}"#];
        let body = Encoder::default()
            .body("q", "p7", payloads.iter().copied())
            .unwrap();

        assert_eq!(&body[..5], b"QPB1\x08");
        assert_eq!(u32_at(&body, 5), 1, "one group");
        assert_eq!(u16_at(&body, 9), 1);
        assert_eq!(&body[11..12], b"q");
        assert_eq!(u16_at(&body, 12), 2);
        assert_eq!(&body[14..16], b"p7");
        assert_eq!(u32_at(&body, 16), 2, "frames in the group");
        let z_len = u32_at(&body, 20);
        let z = &body[24..];
        assert_eq!(z.len(), z_len, "nothing after the group");
        let raw = zstd::stream::decode_all(z).unwrap();
        assert_eq!(
            zstd::zstd_safe::get_frame_content_size(z).unwrap(),
            Some(raw.len() as u64),
            "the zstd frame records its content size"
        );

        let mut at = 0;
        for payload in payloads {
            let len = u32_at(&raw, at);
            let frame = &raw[at + 4..at + 4 + len];
            assert_eq!(frame[0], 0, "client frames carry no flags");
            let id = Uuid::from_slice(&frame[1..17]).unwrap();
            assert_eq!(id.get_version_num(), 7);
            assert_eq!(u16_at(frame, 17), 36);
            assert_eq!(&frame[19..55], id.to_string().as_bytes(), "txn = id text");
            assert_eq!(&frame[55..], payload);
            at += 4 + len;
        }
        assert_eq!(at, raw.len());
    }
}
