//! Why a push stored nothing: the one error of the push path, shared by the writers that
//! combine pushes, the staging and the appends.

use crate::db::DbError;
use crate::segment::{BlobError, FrameError};

/// Why a push stored nothing.
#[derive(Debug, thiserror::Error)]
pub enum PushError {
    /// The database failed; the whole push rolled back.
    #[error("push could not be stored")]
    Db(#[from] DbError),
    /// An item could not be framed (a field too long for the stored format).
    #[error("item {index} cannot be stored: {source}")]
    Frame {
        /// Position of the item in the request.
        index: usize,
        /// What is wrong with it.
        #[source]
        source: FrameError,
    },
    /// A segment could not be compressed.
    #[error("segment could not be built")]
    Blob(#[from] BlobError),
    /// Other writers kept changing the partition while its dedup window was brought up to
    /// date (windows evicted under memory pressure); nothing was stored.
    #[error("push to {queue}/{partition} raced its dedup window; retry")]
    WindowRace {
        /// The queue.
        queue: String,
        /// The partition.
        partition: String,
    },
    /// The broker stopped before the push was written; nothing was stored.
    #[error("the broker is stopping")]
    Stopped,
    /// The queue is encrypted but this node has no `QUEEN_ENCRYPTION_KEY`.
    #[error("queue {queue} is encrypted but this broker has no QUEEN_ENCRYPTION_KEY")]
    NoKey {
        /// The encrypted queue.
        queue: String,
    },
}
