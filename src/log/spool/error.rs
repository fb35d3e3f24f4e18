//! Why a push could not be spooled.

use std::io;

use super::record::RecordError;

/// Why a push could not be spooled; nothing of it was acknowledged.
#[derive(Debug, thiserror::Error)]
pub enum SpoolError {
    /// The spool holds `FILE_BUFFER_MAX_BYTES` already, or would with this push.
    #[error("push spool is full: FILE_BUFFER_MAX_BYTES is {max_bytes} bytes; retry once it has been replayed")]
    Full {
        /// The cap.
        max_bytes: u64,
    },
    /// The push does not fit a record.
    #[error(transparent)]
    Record(#[from] RecordError),
    /// The disk failed the write or its `fsync`.
    #[error("push spool could not write to disk")]
    Io(#[source] io::Error),
    /// The spool's writer has stopped (the broker is stopping).
    #[error("push spool is stopped")]
    Stopped,
}
