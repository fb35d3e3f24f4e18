//! The replay: one task per node that stores spooled pushes through the push path
//! (`log::push`: prepare, stage, commit, announce), oldest record first, and deletes a
//! file once every record in it is committed.
//!
//! Records are taken in batches (consecutive records of one tenant, bounded in records,
//! messages and bytes) and stored in one transaction: the staging keeps request order
//! within each partition, so FIFO per partition holds. The cursor moves, and the partitions' counts go down, only after the
//! commit; a database failure leaves both where they were and the batch is tried again
//! after a pause (doubling up to [`MAX_PAUSE`]). A record stored twice (the node died
//! between a commit and the deletion of its file) answers `duplicate`: its transaction ids
//! are the ones it was answered with. While push maintenance is on, the replay waits.

use std::fs::File;
use std::sync::Arc;
use std::time::Duration;

use tracing::{debug, error, info, warn};

use super::files::{self, ReadError};
use super::record::Record;
use super::state::{keys_of, SpoolStats};
use super::Spool;
use crate::broker::Broker;
use crate::db::transaction::DataTransaction;
use crate::domain::PushStatus;
use crate::log::push::announce::announce;
use crate::log::push::error::PushError;
use crate::log::push::prepare_with_ids;
use crate::log::push::prepared::{PreparedPush, Staged};
use crate::log::push::stage::stage_many;

/// Records one replay transaction takes at most.
const BATCH_RECORDS: usize = 64;
/// Messages one replay transaction takes at most (as the push combiner's cap).
const BATCH_MESSAGES: usize = 20_000;
/// Record bytes (frames, as on disk) one replay transaction takes at most, unless its first
/// record alone is larger: a record decodes to about twice its size, and a spool of a few
/// large pushes read whole could take more memory than the pod has, again at each restart.
/// 8 MiB keeps a batch's memory in the tens of MiB while many small records still share
/// one commit.
const BATCH_BYTES: u64 = 8 << 20;
/// First pause after a failed attempt.
const FIRST_PAUSE: Duration = Duration::from_millis(200);
/// Longest pause between attempts while the database is away.
const MAX_PAUSE: Duration = Duration::from_secs(2);
/// How often an idle replay looks again without being woken.
const IDLE_LOOK: Duration = Duration::from_secs(1);

/// Starts the replay of `broker`'s spool; it ends when the broker starts to stop.
pub fn spawn(broker: Arc<Broker>, spool: Arc<Spool>) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut replay = Replay {
            seq: spool.first_seq,
            offset: files::HEADER,
            file: None,
            pause: FIRST_PAUSE,
            one_by_one: false,
        };
        loop {
            let wait = replay.step(&broker, &spool).await;
            if let Some(wait) = wait {
                tokio::select! {
                    _ = spool.shared.wake.notified() => {}
                    _ = tokio::time::sleep(wait) => {}
                    _ = broker.draining.cancelled() => return,
                }
            }
            if broker.is_draining() {
                return;
            }
        }
    })
}

/// Where the replay is.
struct Replay {
    /// The file it reads.
    seq: u64,
    /// The offset of its next record.
    offset: u64,
    file: Option<File>,
    /// The pause after the next failure.
    pause: Duration,
    /// Set after a batch failed for a reason of its own: records go one at a time until
    /// the one at fault is passed.
    one_by_one: bool,
}

/// Records read for one attempt: each with its frame's length.
type Batch = Vec<(Record, u64)>;

impl Replay {
    /// Does one unit of work; answers how long to wait before the next, if at all.
    async fn step(&mut self, broker: &Broker, spool: &Spool) -> Option<Duration> {
        if broker.in_push_maintenance() {
            return Some(IDLE_LOOK);
        }
        let (current_seq, durable_len) = {
            let p = spool.shared.pending.lock().expect("spool lock");
            (p.current_seq, p.durable_len)
        };
        let sealed = self.seq < current_seq;
        let (batch, end) = match self.read(spool, sealed, durable_len) {
            Ok(read) => read,
            Err(e) => {
                error!(error = %e, file = self.seq, "push spool file could not be read; retrying");
                return Some(MAX_PAUSE);
            }
        };
        if batch.is_empty() {
            return match (end, sealed) {
                (damage, true) => {
                    if let Some(damage) = damage {
                        warn!(error = %damage, file = self.seq, offset = self.offset,
                            "push spool file ends in a record that is not whole (never acknowledged); dropped");
                    }
                    self.finish_file(spool, current_seq);
                    None
                }
                (Some(damage), false) => {
                    error!(error = %damage, file = self.seq, offset = self.offset,
                        "push spool file damaged below its durable length; starting a new file");
                    spool.request_roll();
                    Some(IDLE_LOOK)
                }
                (None, false) => {
                    if self.offset > files::HEADER {
                        spool.request_roll();
                    }
                    Some(IDLE_LOOK)
                }
            };
        }
        match store(broker, &batch).await {
            Ok(()) => {
                spool.away.back();
                for (record, len) in &batch {
                    spool
                        .shared
                        .replayed(*len, &keys_of(&record.tenant, &record.items));
                    self.offset += len;
                }
                SpoolStats::add(&spool.shared.stats.replayed_records, batch.len() as u64);
                SpoolStats::add(&spool.shared.stats.replay_batches, 1);
                self.pause = FIRST_PAUSE;
                if self.one_by_one && batch.len() == 1 {
                    self.one_by_one = false;
                }
                None
            }
            Err(e) if is_lasting(&e) => {
                if batch.len() > 1 {
                    self.one_by_one = true;
                    return None;
                }
                let (record, len) = &batch[0];
                error!(error = %e, queue = %record.items[0].queue, messages = record.items.len(),
                    "spooled push cannot be stored; dropped");
                SpoolStats::add(
                    &spool.shared.stats.replay_rejected,
                    record.items.len() as u64,
                );
                spool
                    .shared
                    .replayed(*len, &keys_of(&record.tenant, &record.items));
                self.offset += len;
                None
            }
            Err(e) => {
                if matches!(&e, PushError::Db(db) if db.is_outage()) {
                    spool.away.seen();
                    debug!(error = %e, pause_ms = self.pause.as_millis() as u64, "spool replay waits for the database");
                } else {
                    // Not the outage the spool is for (a missing encryption key, a
                    // serialisation failure): someone may have to look.
                    warn!(error = ?e, pause_ms = self.pause.as_millis() as u64, "spool replay failed; retrying");
                }
                SpoolStats::add(&spool.shared.stats.replay_retries, 1);
                let pause = self.pause;
                self.pause = (self.pause * 2).min(MAX_PAUSE);
                Some(pause)
            }
        }
    }

    /// Reads the next batch from the cursor; also answers why reading stopped early
    /// (damage or a torn tail), if it did.
    fn read(
        &mut self,
        spool: &Spool,
        sealed: bool,
        durable_len: u64,
    ) -> Result<(Batch, Option<ReadError>), std::io::Error> {
        if self.file.is_none() {
            match File::open(files::path(&spool.dir, self.seq)) {
                Ok(file) => self.file = Some(file),
                // A number the writer never used (a roll that failed): nothing to read.
                Err(e) if e.kind() == std::io::ErrorKind::NotFound && sealed => {
                    return Ok((Vec::new(), None))
                }
                Err(e) => return Err(e),
            }
        }
        let file = self.file.as_ref().expect("opened above");
        let limit = if sealed {
            file.metadata()?.len()
        } else {
            durable_len
        };
        let max_records = if self.one_by_one { 1 } else { BATCH_RECORDS };
        let (mut batch, mut at, mut messages) = (Batch::new(), self.offset, 0);
        while batch.len() < max_records && messages < BATCH_MESSAGES {
            match files::read_record(file, at, limit) {
                Ok(None) => break,
                Ok(Some((record, len))) => {
                    if batch.first().is_some_and(|(first, _)| {
                        first.tenant != record.tenant || at - self.offset + len > BATCH_BYTES
                    }) {
                        break;
                    }
                    messages += record.items.len();
                    at += len;
                    batch.push((record, len));
                }
                Err(ReadError::Io(e)) => return Err(e),
                Err(damage) => return Ok((batch, Some(damage))),
            }
        }
        Ok((batch, None))
    }

    /// Deletes the file just read to its end and moves to the next one.
    fn finish_file(&mut self, spool: &Spool, current_seq: u64) {
        let size = self
            .file
            .take()
            .and_then(|f| f.metadata().ok())
            .map_or(0, |m| m.len());
        if let Err(e) = files::remove(&spool.dir, self.seq) {
            warn!(error = %e, file = self.seq, "replayed push spool file could not be deleted");
        }
        {
            let mut p = spool.shared.pending.lock().expect("spool lock");
            p.disk_bytes = p.disk_bytes.saturating_sub(size);
        }
        if size > 0 {
            info!(
                file = self.seq,
                bytes = size,
                "push spool file replayed and deleted"
            );
        }
        self.seq = (self.seq + 1).min(current_seq);
        self.offset = files::HEADER;
    }
}

/// True for a failure that trying again cannot mend: the record's items cannot be framed
/// or compressed, PostgreSQL refuses one of its values as data, or the push would create a
/// queue or partition over its tenant's limit (the answer it would have had, a 403, if
/// the database had been there). Any other failure (the database away, a serialisation
/// failure, a missing encryption key) is waited out, so a spooled push is given up only
/// for a fault of its own, and the rest of the spool goes on.
fn is_lasting(e: &PushError) -> bool {
    match e {
        PushError::Frame { .. } | PushError::Blob(_) => true,
        PushError::Db(db) => db.is_data_exception() || db.tenant_limit().is_some(),
        _ => false,
    }
}

/// Stores a batch of one tenant's records in one transaction, then tells the group
/// actors and the peers, as a push does.
async fn store(broker: &Broker, batch: &Batch) -> Result<(), PushError> {
    let tenant = &batch[0].0.tenant;
    let mut prepared: Vec<PreparedPush> = Vec::with_capacity(batch.len());
    for (record, _) in batch {
        let ids = record.message_ids.clone();
        prepared.push(prepare_with_ids(broker, tenant, &record.items, Vec::new(), ids).await?);
    }
    let staged: Vec<Staged<'_>> = batch
        .iter()
        .zip(&prepared)
        .map(|((record, _), prepared)| Staged {
            items: &record.items,
            prepared,
        })
        .collect();
    let zstd_level = broker.config.push.zstd_level;
    let mut conn = broker.db.conn().await?;
    let result = async {
        let tx = DataTransaction::begin(&mut conn).await?;
        let outcomes = stage_many(&tx, broker, tenant, &staged, zstd_level).await?;
        tx.commit().await?;
        Ok::<_, PushError>(outcomes)
    }
    .await;
    let outcomes = match result {
        Ok(outcomes) => outcomes,
        Err(PushError::Db(error)) => return Err(PushError::Db(conn.note(error))),
        Err(other) => return Err(other),
    };
    drop(conn);
    let stats = &broker
        .spool
        .as_ref()
        .expect("a replay runs only with a spool")
        .shared
        .stats;
    for ((record, _), outcomes) in batch.iter().zip(&outcomes) {
        announce(broker, tenant, &record.items, outcomes);
        for o in outcomes {
            match o.status {
                PushStatus::Queued => SpoolStats::add(&stats.replayed_messages, 1),
                PushStatus::Duplicate => SpoolStats::add(&stats.replayed_duplicates, 1),
                PushStatus::Full { max_size } => {
                    warn!(queue = %record.items[0].queue, max_size, transaction_id = %o.transaction_id,
                        "spooled message not stored: its queue is at maxSize");
                    SpoolStats::add(&stats.replay_rejected, 1);
                }
            }
        }
    }
    Ok(())
}
