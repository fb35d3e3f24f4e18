//! The spool's writer: one thread that owns the newest file, appends records, and
//! `fsync`s them before any is answered. Records that arrive while an `fsync` runs share
//! the next one (group commit), so a burst of buffered pushes costs a few disk flushes,
//! not one each. It rolls to a new file when the current one is large, or when the replay
//! has read all of it (so the replay can delete it).

use std::fs::File;
use std::io::{self, Write};
use std::os::unix::fs::FileExt;
use std::path::PathBuf;
use std::sync::{mpsc, Arc};

use tokio::sync::oneshot;
use tracing::error;

use super::error::SpoolError;
use super::files;
use super::state::{PartitionKey, Shared};

/// A file past this size takes no more records: files are deleted whole, so this bounds
/// what a replayed file keeps on disk after its records are stored.
pub const ROLL_BYTES: u64 = 16 << 20;
/// Most records one `fsync` covers (bounds the answer delay of the first).
const MAX_BATCH: usize = 256;

/// One record to append.
pub struct Job {
    /// The framed record.
    pub bytes: Vec<u8>,
    /// The partitions it pushes to.
    pub keys: Vec<PartitionKey>,
    /// Answered once the record is durable, or why not.
    pub reply: oneshot::Sender<Result<(), SpoolError>>,
}

/// What the writer is asked.
pub enum Msg {
    /// Append a record.
    Append(Job),
    /// Start a new file if the current one holds records (the replay has read them all).
    Roll,
}

/// The writer's own state.
pub struct Writer {
    /// The spool's folder.
    pub dir: PathBuf,
    /// `FILE_BUFFER_MAX_BYTES`.
    pub max_bytes: u64,
    /// What it shares with the replay and the handlers.
    pub shared: Arc<Shared>,
    /// The newest file, which it appends to.
    pub file: File,
    /// Its number.
    pub seq: u64,
    /// Its length, every byte durable.
    pub len: u64,
    /// Set when a write failed and no new file could be started: nothing may be appended
    /// behind the failed write, so every append fails until a new file starts.
    pub broken: bool,
}

/// Starts the writer thread; it ends when every sender is dropped.
pub fn start(writer: Writer) -> io::Result<mpsc::Sender<Msg>> {
    let (sender, receiver) = mpsc::channel();
    std::thread::Builder::new()
        .name("queen-spool".to_owned())
        .spawn(move || writer.run(receiver))?;
    Ok(sender)
}

impl Writer {
    fn run(mut self, receiver: mpsc::Receiver<Msg>) {
        while let Ok(first) = receiver.recv() {
            let mut jobs = Vec::new();
            let mut roll = false;
            let mut next = Some(first);
            while let Some(msg) = next {
                match msg {
                    Msg::Append(job) => jobs.push(job),
                    Msg::Roll => roll = true,
                }
                next = (jobs.len() < MAX_BATCH)
                    .then(|| receiver.try_recv().ok())
                    .flatten();
            }
            if !jobs.is_empty() {
                self.append(jobs);
            }
            if (roll && self.len > files::HEADER) || self.len >= ROLL_BYTES {
                if let Err(e) = self.roll() {
                    error!(error = %e, dir = %self.dir.display(), "push spool could not start a new file");
                }
            }
        }
    }

    /// Writes the jobs that fit under the cap, `fsync`s, counts them, then answers all.
    fn append(&mut self, jobs: Vec<Job>) {
        if self.broken {
            if let Err(e) = self.roll() {
                error!(error = %e, dir = %self.dir.display(), "push spool still cannot start a new file");
                for job in jobs {
                    let _ = job.reply.send(Err(SpoolError::Io(e.kind().into())));
                }
                return;
            }
        }
        let mut disk = self.shared.pending.lock().expect("spool lock").disk_bytes;
        let mut written = Vec::with_capacity(jobs.len());
        let mut replies = Vec::with_capacity(jobs.len());
        let mut failure: Option<io::Error> = None;
        for job in jobs {
            let len = job.bytes.len() as u64;
            if disk + len > self.max_bytes {
                let _ = job.reply.send(Err(SpoolError::Full {
                    max_bytes: self.max_bytes,
                }));
                continue;
            }
            if failure.is_none() {
                if let Err(e) = self.file.write_all(&job.bytes) {
                    failure = Some(e);
                }
            }
            disk += len;
            written.push((len, job.keys));
            replies.push(job.reply);
        }
        if written.is_empty() {
            return;
        }
        if failure.is_none() {
            if let Err(e) = self.file.sync_data() {
                failure = Some(e);
            }
        }
        if let Some(e) = failure {
            error!(error = %e, dir = %self.dir.display(), "push spool write failed; pushes answered 503");
            // Every job of the batch is answered 503, so none of its records may stay: a
            // complete one before the failed write would be replayed, storing what the
            // client was told failed (and its retry again). Cut the file back to the last
            // answered record, or failing that, spoil the batch's first record so every
            // reader stops before it.
            if let Err(cut) = self.cut_back() {
                error!(error = %cut, dir = %self.dir.display(), "push spool could not cut a failed batch off; spoiling it");
                if let Err(e) = self.spoil_tail() {
                    error!(error = %e, dir = %self.dir.display(), "push spool could not spoil a failed batch; its whole records may be replayed");
                }
            }
            if let Err(e) = self.roll() {
                error!(error = %e, "push spool could not start a new file");
                self.broken = true;
            }
            for reply in replies {
                let _ = reply.send(Err(SpoolError::Io(io::Error::new(e.kind(), e.to_string()))));
            }
            return;
        }
        self.len += written.iter().map(|(len, _)| len).sum::<u64>();
        self.shared.written(&written, self.seq, self.len);
        for reply in replies {
            let _ = reply.send(Ok(()));
        }
        self.shared.wake.notify_one();
    }

    /// Truncates the current file to its answered length and makes that durable.
    fn cut_back(&mut self) -> io::Result<()> {
        self.file.set_len(self.len)?;
        self.file.sync_all()
    }

    /// Overwrites the length of the record after the answered ones with one past
    /// `record::MAX_BODY`, so `files::read_record` answers it damaged and every reader
    /// stops there. Rewrites bytes already on disk, which a full disk still takes.
    fn spoil_tail(&mut self) -> io::Result<()> {
        self.file.write_all_at(&[0xFF; 4], self.len)?;
        self.file.sync_data()
    }

    /// Starts file `seq + 1`; the old one is then read to its end by the replay.
    fn roll(&mut self) -> io::Result<()> {
        let old_len = self.file.metadata().map_or(self.len, |m| m.len());
        let file = files::create(&self.dir, self.seq + 1)?;
        self.file = file;
        self.seq += 1;
        self.len = files::HEADER;
        self.broken = false;
        {
            let mut p = self.shared.pending.lock().expect("spool lock");
            // Bytes written by a failed append were not counted; the file's size is.
            p.disk_bytes += old_len.saturating_sub(p.durable_len) + files::HEADER;
            p.current_seq = self.seq;
            p.durable_len = self.len;
        }
        self.shared.wake.notify_one();
        Ok(())
    }
}
