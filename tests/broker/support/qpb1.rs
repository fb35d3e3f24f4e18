//! A test-side `QPB1` encoder, written from wire contract §2.2 and independent of the
//! broker's decoder: a byte builder for bodies (well-formed or deliberately broken) and the
//! stored-frame layout that flag 8 carries.

use uuid::Uuid;

/// Flag 1: the body after `raw_len` is one zstd frame.
pub const ZSTD: u8 = 1;
/// Flag 2: answer with totals.
pub const COUNTS: u8 = 2;
/// Flag 4: per-item transaction ids.
pub const TXN: u8 = 4;
/// Flag 8: groups of stored frames, zstd-compressed per group.
pub const FRAMES: u8 = 8;

/// Little-endian byte builder.
#[derive(Debug, Clone, Default)]
pub struct Bytes(pub Vec<u8>);

impl Bytes {
    /// A body starting with `QPB1` and `flags`.
    pub fn envelope(flags: u8) -> Self {
        let mut b = Bytes::default();
        b.raw(b"QPB1").u8(flags);
        b
    }

    /// Appends bytes as they are.
    pub fn raw(&mut self, bytes: &[u8]) -> &mut Self {
        self.0.extend_from_slice(bytes);
        self
    }

    /// Appends one byte.
    pub fn u8(&mut self, v: u8) -> &mut Self {
        self.0.push(v);
        self
    }

    /// Appends a little-endian u16.
    pub fn u16(&mut self, v: u16) -> &mut Self {
        self.raw(&v.to_le_bytes())
    }

    /// Appends a little-endian u32.
    pub fn u32(&mut self, v: u32) -> &mut Self {
        self.raw(&v.to_le_bytes())
    }

    /// Appends a u16-prefixed string.
    pub fn str16(&mut self, s: &str) -> &mut Self {
        self.u16(s.len() as u16).raw(s.as_bytes())
    }

    /// Appends u32-prefixed bytes.
    pub fn bytes32(&mut self, b: &[u8]) -> &mut Self {
        self.u32(b.len() as u32).raw(b)
    }

    /// The built bytes.
    pub fn build(&self) -> Vec<u8> {
        self.0.clone()
    }
}

/// One message of a body without flag 8.
pub struct Item<'a> {
    /// Transaction id (written only with flag 4; empty = broker mints).
    pub txn: &'a str,
    /// JSON text.
    pub payload: &'a str,
}

/// The groups part of a body without flag 8 (`u32 groups` onwards).
pub fn plain_groups(with_txn: bool, groups: &[(&str, &str, Vec<Item<'_>>)]) -> Vec<u8> {
    let mut b = Bytes::default();
    b.u32(groups.len() as u32);
    for (queue, partition, items) in groups {
        b.str16(queue).str16(partition).u32(items.len() as u32);
        for item in items {
            if with_txn {
                b.str16(item.txn);
            }
            b.bytes32(item.payload.as_bytes());
        }
    }
    b.0
}

/// A whole body without flag 8: `flags` may hold 2 and 4; with 1 the groups are compressed
/// and `raw_len` written.
pub fn plain(flags: u8, groups: &[(&str, &str, Vec<Item<'_>>)]) -> Vec<u8> {
    let inner = plain_groups(flags & TXN != 0, groups);
    let mut b = Bytes::envelope(flags);
    if flags & ZSTD != 0 {
        b.u32(inner.len() as u32)
            .raw(&zstd::bulk::compress(&inner, 3).expect("zstd compresses"));
    } else {
        b.raw(&inner);
    }
    b.build()
}

/// One stored frame as a client mints it.
#[derive(Debug, Clone)]
pub struct Frame {
    /// Frame flags (clients send 0; 1 adds the trace id).
    pub flags: u8,
    /// The client-minted UUIDv7.
    pub id: Uuid,
    /// Trace id, written when flag 1 is set.
    pub trace: Option<Uuid>,
    /// Transaction id.
    pub txn: String,
    /// Payload bytes (JSON text).
    pub payload: Vec<u8>,
}

impl Frame {
    /// A client-style frame: fresh UUIDv7 id, no trace, the given transaction id and JSON.
    pub fn new(txn: &str, payload: &str) -> Self {
        Frame {
            flags: 0,
            id: Uuid::now_v7(),
            trace: None,
            txn: txn.to_owned(),
            payload: payload.as_bytes().to_vec(),
        }
    }

    /// The frame's bytes, `body_len` included.
    pub fn encode(&self) -> Vec<u8> {
        let mut body = Bytes::default();
        body.u8(self.flags).raw(self.id.as_bytes());
        if let Some(t) = self.trace {
            body.raw(t.as_bytes());
        }
        body.str16(&self.txn).raw(&self.payload);
        let mut out = Bytes::default();
        out.bytes32(&body.0);
        out.0
    }
}

/// Frames back to back, compressed as one zstd frame with its content size recorded.
pub fn compress_frames(frames: &[Frame]) -> Vec<u8> {
    let raw: Vec<u8> = frames.iter().flat_map(Frame::encode).collect();
    zstd::bulk::compress(&raw, 3).expect("zstd compresses")
}

/// A flag-8 body from (queue, partition, n, z) groups.
pub fn framed(groups: &[(&str, &str, u32, &[u8])]) -> Vec<u8> {
    let mut b = Bytes::envelope(FRAMES);
    b.u32(groups.len() as u32);
    for (queue, partition, n, z) in groups {
        b.str16(queue).str16(partition).u32(*n).bytes32(z);
    }
    b.build()
}
