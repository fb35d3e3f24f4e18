//! The read views of tier 3: offset reads ([`fetch`], `queen.log_fetch_v1`) and partition
//! discovery ([`changed`], `queen.partitions_safe_time_v1` and
//! `queen.partitions_changed_v1`). Both only read: no lease, cursor or statistics is
//! written. Rendering records and pages into answers is `http::reads`' job.

pub mod changed;
pub mod fetch;
