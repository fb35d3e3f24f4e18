//! The push spool: where a push goes while PostgreSQL is away (or while push maintenance
//! is on), so it is answered `buffered` instead of 503, and stored later, in order.
//!
//! - [`record`]: one push as a length-prefixed, CRC-checked record.
//! - [`files`]: the folder, its lock, and the numbered append-only files.
//! - [`writer`]: the one thread that appends records and `fsync`s them (several records
//!   per `fsync` when pushes arrive together) before any of them is answered.
//! - [`replay`]: the task that stores spooled pushes through the normal push path, oldest
//!   first, and deletes a file once all its records are committed.
//! - [`intake`]: the push path's choice between the database and the spool.
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

use std::collections::HashMap;
use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex};

use serde_json::{json, Value};
use tokio::sync::{oneshot, Notify};
use tracing::{info, warn};
use uuid::Uuid;

use crate::config::SpoolConfig;
use crate::domain::{PartitionName, QueueName, Tenant};
use crate::log::push::PushItem;

pub mod files;
pub mod intake;
pub mod record;
pub mod replay;
mod writer;

use record::RecordError;

/// A partition as the spool counts it.
pub type PartitionKey = (Tenant, QueueName, PartitionName);

/// Why a push could not be spooled; nothing of it was acknowledged.
#[derive(Debug, thiserror::Error)]
pub enum SpoolError {
    /// The spool holds `FILE_BUFFER_MAX_BYTES` already, or would with this push.
    #[error("push spool is full: FILE_BUFFER_MAX_BYTES is {max_bytes} bytes and the database is unavailable")]
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

/// The counters of `/metrics` `spool`.
#[derive(Debug, Default)]
pub struct SpoolStats {
    /// Push requests answered `buffered`.
    pub buffered_records: AtomicU64,
    /// Messages answered `buffered`.
    pub buffered_messages: AtomicU64,
    /// Spooled push requests stored by the replay.
    pub replayed_records: AtomicU64,
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
struct Pending {
    /// Records not yet replayed, per partition they touch.
    partitions: HashMap<PartitionKey, u64>,
    /// Bytes of the files on disk (headers and replayed records included until the file
    /// is deleted): what the cap is checked against.
    disk_bytes: u64,
    /// Frame bytes of records not yet replayed.
    bytes: u64,
    /// The file the writer appends to, and how far its records are durable.
    current_seq: u64,
    durable_len: u64,
}

/// The parts the writer thread, the replay task and the handlers share.
struct Shared {
    pending: Mutex<Pending>,
    /// Records not yet replayed: mirrors `pending` so a push checks one atomic, not a
    /// lock, while the spool is empty.
    records: AtomicU64,
    /// Wakes the replay: a record was written, push maintenance ended, or a roll is done.
    wake: Notify,
    stats: SpoolStats,
}

/// The spool of this node.
pub struct Spool {
    dir: PathBuf,
    max_bytes: u64,
    shared: Arc<Shared>,
    writer: Mutex<Option<mpsc::Sender<writer::Msg>>>,
    /// The first file the replay reads (the oldest found at start-up).
    first_seq: u64,
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
            "replayedRecords": 0, "replayedMessages": 0, "replayedDuplicates": 0,
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
            "replayedMessages": get(&s.replayed_messages),
            "replayedDuplicates": get(&s.replayed_duplicates),
            "replayRejected": get(&s.replay_rejected),
            "replayRetries": get(&s.replay_retries),
            "refusedFull": get(&s.refused_full),
        })
    }
}

impl SpoolStats {
    fn add(counter: &AtomicU64, n: u64) {
        counter.fetch_add(n, Ordering::Relaxed);
    }
}

impl Shared {
    /// Counts records written durably (the writer, after `fsync`).
    fn written(&self, appended: &[(u64, Vec<PartitionKey>)], seq: u64, durable_len: u64) {
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
    fn replayed(&self, len: u64, keys: &[PartitionKey]) {
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
fn recover(dir: &Path, seq: u64, pending: &mut Pending) -> io::Result<u64> {
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
fn keys_of(tenant: &Tenant, items: &[PushItem]) -> Vec<PartitionKey> {
    let mut seen = std::collections::HashSet::new();
    items
        .iter()
        .filter(|item| seen.insert((&item.queue, &item.partition)))
        .map(|item| (tenant.clone(), item.queue.clone(), item.partition.clone()))
        .collect()
}
