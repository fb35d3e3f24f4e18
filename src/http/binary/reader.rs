//! A bounds-checked little-endian reader over a request body: every length is checked
//! against the bytes that remain before anything is sliced, so a lying length field is an
//! error, never a panic or an allocation.

use super::error::BinaryError;

/// Reads fields in order from a byte slice.
pub(crate) struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
    /// Added to positions in errors, when `buf` is a tail of the body.
    base: usize,
}

impl<'a> Reader<'a> {
    /// Starts at the first byte of `buf`.
    pub(crate) fn new(buf: &'a [u8]) -> Self {
        Self::at(buf, 0)
    }

    /// Starts at the first byte of `buf`, which sits at offset `base` of the body.
    pub(crate) fn at(buf: &'a [u8], base: usize) -> Self {
        Self { buf, pos: 0, base }
    }

    /// Bytes not read yet.
    pub(crate) fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    /// The next `n` bytes, or `Truncated` naming `field` when fewer remain.
    pub(crate) fn bytes(&mut self, n: usize, field: &'static str) -> Result<&'a [u8], BinaryError> {
        if n > self.remaining() {
            return Err(BinaryError::Truncated {
                field,
                at: self.base + self.pos,
                needed: n,
                remaining: self.remaining(),
            });
        }
        let out = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(out)
    }

    /// Everything not read yet.
    pub(crate) fn rest(&mut self) -> &'a [u8] {
        let out = &self.buf[self.pos..];
        self.pos = self.buf.len();
        out
    }

    /// One byte.
    pub(crate) fn u8(&mut self, field: &'static str) -> Result<u8, BinaryError> {
        Ok(self.bytes(1, field)?[0])
    }

    /// A little-endian `u16`.
    pub(crate) fn u16(&mut self, field: &'static str) -> Result<u16, BinaryError> {
        let b = self.bytes(2, field)?;
        Ok(u16::from_le_bytes([b[0], b[1]]))
    }

    /// A little-endian `u32`.
    pub(crate) fn u32(&mut self, field: &'static str) -> Result<u32, BinaryError> {
        let b = self.bytes(4, field)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    /// A `u16`-prefixed UTF-8 string.
    pub(crate) fn str16(&mut self, field: &'static str) -> Result<&'a str, BinaryError> {
        let len = self.u16(field)?;
        let bytes = self.bytes(usize::from(len), field)?;
        std::str::from_utf8(bytes).map_err(|_| BinaryError::NotUtf8 { field })
    }

    /// A `u32`-prefixed run of bytes.
    pub(crate) fn bytes32(&mut self, field: &'static str) -> Result<&'a [u8], BinaryError> {
        let len = self.u32(field)?;
        self.bytes(len as usize, field)
    }

    /// Offset of the next byte (in the body).
    pub(crate) fn position(&self) -> usize {
        self.base + self.pos
    }
}
