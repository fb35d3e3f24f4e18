//! What the spool's writer, its replay and the push handlers share: the counts of what is
//! spooled and not yet stored (per partition, records, bytes), where the writer is, the
//! counters of `/metrics`, and the start-up count of what an earlier run left.

use std::collections::HashMap;
use std::fs::File;
use std::io;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use tokio::sync::Notify;
use tracing::warn;

use super::files;
use crate::domain::{PartitionName, PushItem, QueueName, Tenant};

/// A partition as the spool counts it.
pub type PartitionKey = (Tenant, QueueName, PartitionName);

/// The counters of `/metrics` `spool`.
#[derive(Debug, Default)]
pub struct SpoolStats {
    /// Push requests answered `buffered`.
    pub buffered_records: AtomicU64,
    /// Messages answered `buffered`.
    pub buffered_messages: AtomicU64,
    /// Spooled push requests stored by the replay.
    pub replayed_records: AtomicU64,
    /// Replay transactions committed (each at most `replay::BATCH_BYTES` of records, unless
    /// one record is larger).
    pub replay_batches: AtomicU64,
    /// Spooled messages stored by the replay as new messages.
    pub replayed_messages: AtomicU64,
    /// Spooled messages the replay found stored already (answered `duplicate`).
    pub replayed_duplicates: AtomicU64,
    /// Spooled messages the replay could not store (the queue at its `maxSize`, or an item
    /// the stored format refuses); each is logged.
    pub replay_rejected: AtomicU64,
    /// Replay attempts that met a database failure and were tried again later.
    pub replay_retries: AtomicU64,
    /// Pushes refused with 503 because the spool was full.
    pub refused_full: AtomicU64,
}

/// What is spooled and not yet replayed, under one lock.
#[derive(Debug, Default)]
pub(super) struct Pending {
    /// Records not yet replayed, per partition they touch.
    pub(super) partitions: HashMap<PartitionKey, u64>,
    /// Bytes of the files on disk (headers and replayed records included until the file
    /// is deleted): what the cap is checked against.
    pub(super) disk_bytes: u64,
    /// Frame bytes of records not yet replayed.
    pub(super) bytes: u64,
    /// The file the writer appends to, and how far its records are durable.
    pub(super) current_seq: u64,
    pub(super) durable_len: u64,
}

/// The parts the writer thread, the replay task and the handlers share.
pub(super) struct Shared {
    pub(super) pending: Mutex<Pending>,
    /// Records not yet replayed: mirrors `pending` so a push checks one atomic, not a
    /// lock, while the spool is empty.
    pub(super) records: AtomicU64,
    /// Wakes the replay: a record was written, push maintenance ended, or a roll is done.
    pub(super) wake: Notify,
    pub(super) stats: SpoolStats,
}

impl SpoolStats {
    /// Adds `n` to a counter.
    pub(super) fn add(counter: &AtomicU64, n: u64) {
        counter.fetch_add(n, Ordering::Relaxed);
    }
}

impl Shared {
    /// Counts records written durably (the writer, after `fsync`).
    pub(super) fn written(
        &self,
        appended: &[(u64, Vec<PartitionKey>)],
        seq: u64,
        durable_len: u64,
    ) {
        let mut p = self.pending.lock().expect("spool lock");
        for (len, keys) in appended {
            p.bytes += len;
            p.disk_bytes += len;
            for key in keys {
                *p.partitions.entry(key.clone()).or_default() += 1;
            }
        }
        p.current_seq = seq;
        p.durable_len = durable_len;
        self.records
            .fetch_add(appended.len() as u64, Ordering::AcqRel);
    }

    /// Uncounts a record whose replay committed.
    pub(super) fn replayed(&self, len: u64, keys: &[PartitionKey]) {
        let mut p = self.pending.lock().expect("spool lock");
        p.bytes = p.bytes.saturating_sub(len);
        for key in keys {
            if let Some(n) = p.partitions.get_mut(key) {
                *n -= 1;
                if *n == 0 {
                    p.partitions.remove(key);
                }
            }
        }
        self.records.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Counts the whole records of file `seq` into `pending` (a torn tail is logged and left
/// behind: it was never acknowledged); returns how many.
pub(super) fn recover(dir: &Path, seq: u64, pending: &mut Pending) -> io::Result<u64> {
    let file = File::open(files::path(dir, seq))?;
    let len = file.metadata()?.len();
    pending.disk_bytes += len;
    if !files::has_magic(&file)? {
        warn!(file = seq, "push spool file without its header; ignored");
        return Ok(0);
    }
    let (mut at, mut count) = (files::HEADER, 0);
    loop {
        match files::read_record(&file, at, len) {
            Ok(None) => break,
            Ok(Some((push, frame_len))) => {
                pending.bytes += frame_len;
                for key in keys_of(&push.tenant, &push.items) {
                    *pending.partitions.entry(key).or_default() += 1;
                }
                at += frame_len;
                count += 1;
            }
            Err(files::ReadError::Io(e)) => return Err(e),
            Err(files::ReadError::Record(e)) => {
                warn!(file = seq, offset = at, dropped_bytes = len - at, error = %e,
                    "push spool file ends in a record that is not whole (never acknowledged); dropped");
                break;
            }
        }
    }
    Ok(count)
}

/// The distinct partitions of a push.
pub(super) fn keys_of(tenant: &Tenant, items: &[PushItem]) -> Vec<PartitionKey> {
    let mut seen = std::collections::HashSet::new();
    items
        .iter()
        .filter(|item| seen.insert((&item.queue, &item.partition)))
        .map(|item| (tenant.clone(), item.queue.clone(), item.partition.clone()))
        .collect()
}
