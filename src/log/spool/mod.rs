//! The push spool: where a push goes while PostgreSQL is away (or while push maintenance
//! is on), so it is answered `buffered` instead of 503, and stored later, in order.
//!
//! - [`record`]: one push as a length-prefixed, CRC-checked record.
//! - [`files`]: the folder, its lock, and the numbered append-only files.
//! - `writer`: the one thread that appends records and `fsync`s them (several records
//!   per `fsync` when pushes arrive together) before any of them is answered.
//! - [`replay`]: the task that stores spooled pushes through the normal push path, oldest
//!   first, and deletes a file once all its records are committed.
//! - [`intake`]: the push path's choice between the database and the spool; [`away`]:
//!   the node's belief that the database is away, so an outage costs one pool timeout,
//!   not one per push.
//! - [`order`]: the rule for paths that append without the spool (transaction bundles,
//!   the dead-letter retry): refused with a retryable 503 while they could overtake it.
//! - `state`: the counts the three share (what is pending, per partition), and the
//!   start-up count of what an earlier run left; `error`: why a push was not spooled.
//!
//! **Order.** A partition with spooled records not yet replayed takes no direct pushes:
//! they are spooled behind them (see [`Spool::holds_any`]), so a partition's messages are
//! stored in the order their pushes were answered on this node. The counts that decide it
//! are raised before a record is answered and lowered after its replay commits.
//!
//! **Idempotence.** A record carries each item's effective transaction id and message id
//! (minted at spool time for items without one), so a record replayed twice (a crash
//! between its commit and the deletion of its file) answers `duplicate` the second time
//! and stores nothing, within the queue's dedup window.

use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex};

use serde_json::{json, Value};
use tokio::sync::{oneshot, Notify};
use tracing::info;
use uuid::Uuid;

use crate::config::SpoolConfig;
use crate::domain::{PartitionName, PushItem, QueueName, Tenant};

pub mod away;
mod error;
pub mod files;
pub mod intake;
pub mod order;
pub mod record;
pub mod replay;
mod state;
#[cfg(test)]
mod tests;
mod writer;

pub use error::SpoolError;
use state::{keys_of, recover, Pending, Shared};
pub use state::{PartitionKey, SpoolStats};

/// The spool of this node.
pub struct Spool {
    dir: PathBuf,
    max_bytes: u64,
    shared: Arc<Shared>,
    writer: Mutex<Option<mpsc::Sender<writer::Msg>>>,
    /// The first file the replay reads (the oldest found at start-up).
    first_seq: u64,
    /// Whether the database is believed away (pushes then skip the pool timeout).
    pub away: away::Away,
    _lock: File,
}

impl Spool {
    /// Opens the spool's folder (creating it), takes its lock, counts what earlier runs
    /// left in it (dropping torn tails) and starts the writer on a new file.
    pub fn open(config: &SpoolConfig) -> io::Result<Self> {
        let dir = config.dir.clone();
        let lock = files::lock(&dir)?;
        let seqs = files::list(&dir)?;
        let mut pending = Pending::default();
        let mut records = 0u64;
        for &seq in &seqs {
            records += recover(&dir, seq, &mut pending)?;
        }
        let next = seqs.last().map_or(1, |s| s + 1);
        let file = files::create(&dir, next)?;
        pending.disk_bytes += files::HEADER;
        pending.current_seq = next;
        pending.durable_len = files::HEADER;
        if records > 0 {
            info!(
                records,
                bytes = pending.bytes,
                dir = %dir.display(),
                "push spool holds records from an earlier run; replaying them"
            );
        }
        let shared = Arc::new(Shared {
            pending: Mutex::new(pending),
            records: AtomicU64::new(records),
            wake: Notify::new(),
            stats: SpoolStats::default(),
        });
        let sender = writer::start(writer::Writer {
            dir: dir.clone(),
            max_bytes: config.max_bytes,
            shared: shared.clone(),
            file,
            seq: next,
            len: files::HEADER,
            broken: false,
        })?;
        Ok(Spool {
            dir,
            max_bytes: config.max_bytes,
            shared,
            writer: Mutex::new(Some(sender)),
            first_seq: seqs.first().copied().unwrap_or(next),
            away: away::Away::default(),
            _lock: lock,
        })
    }

    /// Writes one push durably: answered `Ok` only once its record is `fsync`ed and its
    /// partitions count it. `message_ids` and `transaction_ids` are what the push is
    /// answered with, one per item.
    pub async fn append(
        &self,
        tenant: &Tenant,
        items: &[PushItem],
        message_ids: &[Uuid],
        transaction_ids: &[String],
    ) -> Result<(), SpoolError> {
        let bytes = record::encode(tenant, items, message_ids, transaction_ids)?;
        let keys = keys_of(tenant, items);
        let (reply, answer) = oneshot::channel();
        let job = writer::Job { bytes, keys, reply };
        let sent = match self.writer.lock().expect("spool writer lock").as_ref() {
            Some(sender) => sender.send(writer::Msg::Append(job)).is_ok(),
            None => false,
        };
        if !sent {
            return Err(SpoolError::Stopped);
        }
        let result = answer.await.unwrap_or(Err(SpoolError::Stopped));
        match &result {
            Ok(()) => {
                SpoolStats::add(&self.shared.stats.buffered_records, 1);
                let n = items.len() as u64;
                SpoolStats::add(&self.shared.stats.buffered_messages, n);
            }
            Err(SpoolError::Full { .. }) => SpoolStats::add(&self.shared.stats.refused_full, 1),
            Err(_) => {}
        }
        result
    }

    /// True when any partition `items` push to has spooled records not yet replayed: the
    /// push must then be spooled behind them. One atomic load while the spool is empty.
    pub fn holds_any(&self, tenant: &Tenant, items: &[PushItem]) -> bool {
        if self.shared.records.load(Ordering::Acquire) == 0 {
            return false;
        }
        let pending = self.shared.pending.lock().expect("spool lock");
        let mut last: Option<(&QueueName, &PartitionName)> = None;
        for item in items {
            if last == Some((&item.queue, &item.partition)) {
                continue;
            }
            last = Some((&item.queue, &item.partition));
            let key = (tenant.clone(), item.queue.clone(), item.partition.clone());
            if pending.partitions.contains_key(&key) {
                return true;
            }
        }
        false
    }

    /// True when `partition` of `queue` has spooled records not yet replayed.
    pub fn holds(&self, tenant: &Tenant, queue: &QueueName, partition: &PartitionName) -> bool {
        if self.shared.records.load(Ordering::Acquire) == 0 {
            return false;
        }
        let key = (tenant.clone(), queue.clone(), partition.clone());
        let pending = self.shared.pending.lock().expect("spool lock");
        pending.partitions.contains_key(&key)
    }

    /// Records not yet replayed.
    pub fn pending_records(&self) -> u64 {
        self.shared.records.load(Ordering::Acquire)
    }

    /// Asks the writer to start a new file, so the replay can delete the one it has read.
    fn request_roll(&self) {
        if let Some(sender) = self.writer.lock().expect("spool writer lock").as_ref() {
            let _ = sender.send(writer::Msg::Roll);
        }
    }

    /// Wakes the replay (push maintenance ended).
    pub fn wake(&self) {
        self.shared.wake.notify_one();
    }

    /// Stops the writer: later appends answer [`SpoolError::Stopped`]; what was written
    /// stays for the next start.
    pub fn close(&self) {
        self.writer.lock().expect("spool writer lock").take();
    }

    /// The folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The spool's part of `/metrics` on a node without a spool: every number zero.
    pub fn off_json() -> Value {
        json!({
            "enabled": false, "pendingRecords": 0, "pendingBytes": 0, "pendingPartitions": 0,
            "diskBytes": 0, "maxBytes": 0, "bufferedRecords": 0, "bufferedMessages": 0,
            "replayedRecords": 0, "replayBatches": 0, "replayedMessages": 0, "replayedDuplicates": 0,
            "replayRejected": 0, "replayRetries": 0, "refusedFull": 0,
        })
    }

    /// The spool's part of `/metrics`.
    pub fn to_json(&self) -> Value {
        let (disk_bytes, bytes, partitions) = {
            let p = self.shared.pending.lock().expect("spool lock");
            (p.disk_bytes, p.bytes, p.partitions.len())
        };
        let s = &self.shared.stats;
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        json!({
            "enabled": true,
            "pendingRecords": self.pending_records(),
            "pendingBytes": bytes,
            "pendingPartitions": partitions,
            "diskBytes": disk_bytes,
            "maxBytes": self.max_bytes,
            "bufferedRecords": get(&s.buffered_records),
            "bufferedMessages": get(&s.buffered_messages),
            "replayedRecords": get(&s.replayed_records),
            "replayBatches": get(&s.replay_batches),
            "replayedMessages": get(&s.replayed_messages),
            "replayedDuplicates": get(&s.replayed_duplicates),
            "replayRejected": get(&s.replay_rejected),
            "replayRetries": get(&s.replay_retries),
            "refusedFull": get(&s.refused_full),
        })
    }
}
