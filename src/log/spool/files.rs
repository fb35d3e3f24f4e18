//! The spool's folder: one lock file, and numbered append-only files of records
//! (`00000000000000000001.qspool`, ...) that are read and deleted oldest first.
//!
//! Every file starts with [`MAGIC`]. A file is written only while it is the newest; a
//! broker that starts again never appends to a file it finds (a torn tail stays where it
//! is, behind the last whole record) but opens the next number. Creating or deleting a
//! file is followed by an `fsync` of the folder, so the name survives a power cut along
//! with the data. The records themselves are `record`'s business.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::FileExt;
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::record::{self, Record, RecordError};

/// The first bytes of every spool file.
pub const MAGIC: &[u8; 8] = b"QSPOOL1\n";
/// Bytes of a file's header.
pub const HEADER: u64 = MAGIC.len() as u64;
const SUFFIX: &str = ".qspool";

/// The path of file `seq`.
pub fn path(dir: &Path, seq: u64) -> PathBuf {
    dir.join(format!("{seq:020}{SUFFIX}"))
}

/// How long [`lock`] keeps trying a lock that another holder has.
const LOCK_PATIENCE: Duration = Duration::from_secs(1);

/// Creates `dir` if needed and takes its lock, so two brokers never share one spool.
/// The lock lasts as long as the returned file is open (a killed process loses it).
///
/// A lock that is taken is tried again for [`LOCK_PATIENCE`] before the spool is called
/// in use: the lock belongs to the open file, and a process that forks keeps it held
/// through its child until the child's exec closes the descriptor, so a spool closed
/// and opened again by one process (a restart in place, a test) may find it held for
/// the moment a concurrent spawn takes (once seen in CI's unit tests).
pub fn lock(dir: &Path) -> io::Result<File> {
    fs::create_dir_all(dir)?;
    let file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(dir.join("lock"))?;
    let deadline = Instant::now() + LOCK_PATIENCE;
    loop {
        // SAFETY: flock on a descriptor this function owns; no memory is involved.
        let taken = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
        if taken == 0 {
            return Ok(file);
        }
        if Instant::now() >= deadline {
            return Err(io::Error::new(
                io::ErrorKind::WouldBlock,
                format!("{} is in use by another broker", dir.display()),
            ));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The numbers of the spool files in `dir`, oldest first.
pub fn list(dir: &Path) -> io::Result<Vec<u64>> {
    let mut seqs = Vec::new();
    for entry in fs::read_dir(dir)? {
        let name = entry?.file_name();
        let name = name.to_string_lossy();
        if let Some(seq) = name.strip_suffix(SUFFIX).and_then(|n| n.parse().ok()) {
            seqs.push(seq);
        }
    }
    seqs.sort_unstable();
    Ok(seqs)
}

/// Creates file `seq` with its header, durably (file and folder synced). A file that
/// could not be made durable (a full disk) is removed again: it holds no record, and left
/// behind it would make every later attempt at `seq` fail (`create_new`), so the spool
/// would refuse pushes until a restart even once space is free.
pub fn create(dir: &Path, seq: u64) -> io::Result<File> {
    let path = path(dir, seq);
    let mut file = OpenOptions::new()
        .create_new(true)
        .append(true)
        .open(&path)?;
    let durable = file
        .write_all(MAGIC)
        .and_then(|()| file.sync_all())
        .and_then(|()| sync_dir(dir));
    if let Err(e) = durable {
        drop(file);
        let _ = fs::remove_file(&path);
        return Err(e);
    }
    Ok(file)
}

/// Deletes file `seq`, durably.
pub fn remove(dir: &Path, seq: u64) -> io::Result<()> {
    match fs::remove_file(path(dir, seq)) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
        _ => {}
    }
    sync_dir(dir)
}

fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

/// Reads the record at `at` of a file whose whole records end at or before `limit`:
/// `None` at `limit` (a clean end); a torn or damaged record is an error, as is a read
/// that fails.
pub fn read_record(file: &File, at: u64, limit: u64) -> Result<Option<(Record, u64)>, ReadError> {
    if at >= limit {
        return Ok(None);
    }
    let have = (limit - at) as usize;
    let mut head = [0u8; record::FRAME_HEADER];
    if have < head.len() {
        return Err(RecordError::Torn {
            needed: head.len(),
            have,
        }
        .into());
    }
    file.read_exact_at(&mut head, at)?;
    let body_len = u32::from_le_bytes(head[0..4].try_into().expect("4 bytes")) as usize;
    if body_len > record::MAX_BODY {
        return Err(RecordError::Damaged("length out of range").into());
    }
    let total = head.len() + body_len;
    if have < total {
        return Err(RecordError::Torn {
            needed: total,
            have,
        }
        .into());
    }
    let mut bytes = vec![0u8; total];
    file.read_exact_at(&mut bytes, at)?;
    let (body, len) = record::frame(&bytes)?.ok_or(RecordError::Damaged("empty"))?;
    Ok(Some((record::decode(body)?, len as u64)))
}

/// True when a file starts with [`MAGIC`].
pub fn has_magic(file: &File) -> io::Result<bool> {
    let mut head = [0u8; MAGIC.len()];
    match file.read_exact_at(&mut head, 0) {
        Ok(()) => Ok(&head == MAGIC),
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => Ok(false),
        Err(e) => Err(e),
    }
}

/// Why a record could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// The bytes are not a whole record.
    #[error(transparent)]
    Record(#[from] RecordError),
    /// The file could not be read.
    #[error("spool file could not be read")]
    Io(#[from] io::Error),
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::{PartitionName, PushItem, QueueName, Tenant};

    fn one(n: u32) -> Vec<u8> {
        let item = PushItem {
            queue: QueueName::parse("q").unwrap(),
            partition: PartitionName::parse("p").unwrap(),
            payload: format!("{{\"n\":{n}}}").into_bytes(),
            transaction_id: None,
            trace_id: None,
            producer: None,
        };
        let id = uuid::Uuid::now_v7();
        record::encode(
            &Tenant::default_tenant(),
            &[item],
            &[id],
            &[format!("t{n}")],
        )
        .unwrap()
    }

    fn file_of(dir: &Path, bytes: &[u8]) -> File {
        let path = dir.join("f");
        fs::write(&path, bytes).unwrap();
        File::open(path).unwrap()
    }

    fn read_all(file: &File) -> (Vec<String>, Option<ReadError>) {
        let limit = file.metadata().unwrap().len();
        let (mut at, mut seen) = (HEADER, Vec::new());
        loop {
            match read_record(file, at, limit) {
                Ok(None) => return (seen, None),
                Ok(Some((r, len))) => {
                    seen.push(r.items[0].transaction_id.clone().unwrap());
                    at += len;
                }
                Err(e) => return (seen, Some(e)),
            }
        }
    }

    #[test]
    fn reading_keeps_the_whole_records_and_stops_at_a_torn_tail() {
        let dir = tempfile::tempdir().unwrap();
        let mut bytes = MAGIC.to_vec();
        bytes.extend(one(1));
        bytes.extend(one(2));
        let third = one(3);
        bytes.extend_from_slice(&third[..third.len() - 3]);
        let file = file_of(dir.path(), &bytes);
        assert!(has_magic(&file).unwrap());
        let (seen, stopped) = read_all(&file);
        assert_eq!(seen, ["t1", "t2"]);
        assert!(matches!(
            stopped,
            Some(ReadError::Record(RecordError::Torn { .. }))
        ));
    }

    #[test]
    fn reading_stops_at_a_damaged_record() {
        let dir = tempfile::tempdir().unwrap();
        let mut bytes = MAGIC.to_vec();
        bytes.extend(one(1));
        bytes.extend(one(2));
        *bytes.last_mut().unwrap() ^= 0xff;
        let (seen, stopped) = read_all(&file_of(dir.path(), &bytes));
        assert_eq!(seen, ["t1"]);
        assert!(matches!(
            stopped,
            Some(ReadError::Record(RecordError::Damaged("CRC mismatch")))
        ));
        assert!(!has_magic(&file_of(dir.path(), b"QSP")).unwrap());
    }

    #[test]
    fn the_folder_lock_keeps_a_second_broker_out_and_files_list_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let held = lock(dir.path()).unwrap();
        assert!(lock(dir.path()).is_err());
        drop(held);
        let again = lock(dir.path()).unwrap();
        // A lock let go of within the patience is taken, not refused.
        let dir_path = dir.path().to_owned();
        let waiter = std::thread::spawn(move || lock(&dir_path).map(|_| ()));
        std::thread::sleep(Duration::from_millis(200));
        drop(again);
        waiter
            .join()
            .unwrap()
            .expect("the lock let go of within the patience");
        for seq in [3, 1, 20] {
            create(dir.path(), seq).unwrap();
        }
        assert_eq!(list(dir.path()).unwrap(), vec![1, 3, 20]);
        remove(dir.path(), 3).unwrap();
        assert_eq!(list(dir.path()).unwrap(), vec![1, 20]);
    }
}
