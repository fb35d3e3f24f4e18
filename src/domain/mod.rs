//! Pure types with no I/O: validated names, identifiers, queue options and what a push
//! carries.
//!
//! Input is parsed into these types at the HTTP edge so inner code never re-checks strings.

pub mod ephemeral;
pub mod kv;
pub mod locks;
pub mod names;
pub mod option_changes;
pub mod options;
pub mod push;
pub mod push_limits;
pub mod streams;
pub mod timers;

pub use names::{ConsumerGroup, NameError, PartitionName, QueueName, Tenant, QUEUE_MODE};
pub use option_changes::{guarded_change, GuardedChange, OptionDefaults};
pub use options::{OptionError, QueueOptions};
pub use push::{PrebuiltSegment, PushItem, PushOutcome, PushStatus};
pub use push_limits::{LimitError, PushLimits, PushTally};
