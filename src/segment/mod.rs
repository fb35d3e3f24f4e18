//! The stored-record format: frames, and the segment blobs built on push and sliced on pop.
//!
//! A segment blob is a run of [`frame`]s, compressed as one zstd frame ([`blob`]). The layout
//! is the one the framed pop answer carries, so stored blobs can ship as they are. This
//! module is pure: no I/O, no SQL. PostgreSQL never looks inside a blob; the broker builds
//! them on push and slices them on pop.

pub mod blob;
pub mod frame;
pub mod seal;
pub mod txn_hash;

pub use blob::{open_blob, slice_frames, BlobError, Codec, SegmentBlob, SegmentBuilder};
pub use frame::{FrameError, FrameIter, NewFrame, StoredFrame};
pub use seal::{PayloadKey, SealError};
pub use txn_hash::{key_of_hash, stored_keys, txn_hash, txn_key, KeyColumns};
