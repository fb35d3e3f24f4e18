//! What a system under test offers the phase runner: producers that push a batch and
//! consumers that pop, acknowledge, and say what they got. The broker (over HTTP), the
//! row-per-message baseline and the raw ceiling (over SQL) implement it.

use std::future::Future;

use crate::workload::Batch;

/// One producer connection.
pub trait Producer: Send + 'static {
    /// Stores one batch; an error ends the run (a benchmark never papers over failures).
    fn push(&mut self, batch: &Batch) -> impl Future<Output = anyhow::Result<()>> + Send;
}

/// One consumer connection, bound to one consumer group.
pub trait Consumer: Send + 'static {
    /// The group's index (0 in queue mode).
    fn group(&self) -> usize;

    /// Claims up to a batch, acknowledges it, and returns what it delivered; empty when
    /// nothing came before the system's own wait (`wait = false`: answer at once).
    fn pop_ack(&mut self, wait: bool)
        -> impl Future<Output = anyhow::Result<Vec<Delivery>>> + Send;
}

/// One delivered message, as the consumer read it from the payload.
#[derive(Debug, Clone, Copy)]
pub struct Delivery {
    /// The producer's sequence number.
    pub seq: u64,
    /// The producer's send time (µs since the epoch).
    pub sent_us: u64,
}
