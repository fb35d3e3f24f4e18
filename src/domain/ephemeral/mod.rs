//! Ephemeral queues' pure types: a queue's declared bounds ([`options`]), the checked
//! inputs of push, pop and ack ([`inputs`]) and the opaque message id ([`id`]). The engine
//! that holds the contents in memory is `src/ephemeral/`; the routes are
//! `src/http/ephemeral/`.

pub mod call;
pub mod id;
pub mod inputs;
pub mod options;

pub use call::{Answer, Call};
pub use id::MessageId;
pub use inputs::{ack_entries, group_name, partition_name, push_payloads, queue_name};
pub use inputs::{AckEntry, AckStatus, EphemeralInputError, PopRequest};
pub use options::{EphemeralOptions, Policy, WindowBuffer};
