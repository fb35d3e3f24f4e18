//! Why a `QPB1` body was refused. Every variant is a 400 whose text names the problem and
//! where it is; `http::error` decides the status, this file only the words.

use crate::domain::{LimitError, NameError};

/// Why a binary push body was refused (always a 400 naming the problem).
#[derive(Debug, thiserror::Error)]
pub enum BinaryError {
    /// The first four bytes are not `QPB1`.
    #[error("binary push body must start with QPB1")]
    Magic,
    /// A field does not fit in the bytes that remain.
    #[error("binary push body truncated in {field} at byte {at}: needs {needed} bytes, {remaining} remain")]
    Truncated {
        /// The field being read.
        field: &'static str,
        /// Offset of the field (in the decompressed body under flag 1).
        at: usize,
        /// Bytes the field needs.
        needed: usize,
        /// Bytes left.
        remaining: usize,
    },
    /// Flag bits this broker does not know.
    #[error("unknown binary push flags {0:#04x} (known: 1, 2, 4, 8)")]
    UnknownFlags(u8),
    /// A string that is not UTF-8.
    #[error("{field} is not valid UTF-8")]
    NotUtf8 {
        /// Which field.
        field: &'static str,
    },
    /// A queue or partition name the broker refuses.
    #[error("group {group}: {source}")]
    Name {
        /// The group's position.
        group: usize,
        /// What is wrong with the name.
        #[source]
        source: NameError,
    },
    /// Bytes left after the last group.
    #[error("{extra} trailing bytes after the last group at byte {at}")]
    Trailing {
        /// Where they start.
        at: usize,
        /// How many.
        extra: usize,
    },
    /// A zstd frame that does not decompress.
    #[error("{what} is not a valid zstd frame")]
    Zstd {
        /// Which frame (the body, or group N).
        what: String,
    },
    /// A decompressed size that differs from the stated one.
    #[error("{what} decompresses to {actual} bytes, but {stated} were stated")]
    SizeMismatch {
        /// Which frame.
        what: String,
        /// The stated size.
        stated: u64,
        /// What came out.
        actual: usize,
    },
    /// A zstd frame whose header does not record its content size.
    #[error("group {group}: the zstd frame must record its content size")]
    NoContentSize {
        /// The group's position.
        group: usize,
    },
    /// Decompressed content over the body limit.
    #[error("decompressed body exceeds {limit} bytes")]
    TooLarge {
        /// The limit (`QUEEN_MAX_BODY_BYTES`).
        limit: usize,
    },
    /// A payload that is not one JSON document.
    #[error("group {group} message {index}: payload is not JSON")]
    NotJson {
        /// The group's position.
        group: usize,
        /// The message's position in its group.
        index: usize,
    },
    /// A stored frame that is malformed or not acceptable from a client.
    #[error("group {group} frame {index}: {reason}")]
    Frame {
        /// The group's position.
        group: usize,
        /// The frame's position in its group.
        index: usize,
        /// What is wrong.
        reason: String,
    },
    /// A group whose frame count differs from its `n`.
    #[error("group {group} states {stated} frames but holds {found}")]
    FrameCount {
        /// The group's position.
        group: usize,
        /// Its `n`.
        stated: u32,
        /// Frames found (counting stops one past `n`).
        found: u64,
    },
    /// More messages or partitions than one push may hold.
    #[error(transparent)]
    Limit(#[from] LimitError),
}
