//! The append loop of a push (or of several combined pushes, see `super::combiner`): per
//! (queue, partition) group, dedup within the batch (the first occurrence wins), then
//! against the partition's dedup window ([`super::window`]), then one `log_push_v3` call
//! with one segment per run of items (a client's prebuilt group kept as sent when it can
//! be). A stale answer (others appended since the window was last brought up to date)
//! lists what they stored, and the check and the call run again under the partition lock
//! the transaction now holds. What a stale answer lists may include this transaction's own
//! earlier appends, not committed (a bundle pushing to one partition twice): the push keeps
//! it in an [`Overlay`] of its own, and the node's window learns it only after the commit
//! (`DataTransaction::after_commit`), so a rollback leaves the window as it was.

use std::borrow::Cow;
use std::collections::hash_map::Entry;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use tracing::debug;

use super::error::PushError;
use super::prepared::Staged;
use super::window::{DedupWindows, Hit, Learned, WindowKey};
use crate::broker::Broker;
use crate::db::push::single_append::{self, Appended};
use crate::db::push::{AppendOutcome, NewSegment, PartitionAppend, WindowSegment};
use crate::db::transaction::DataTransaction;
use crate::db::PgConn;
use crate::domain::{PartitionName, PushItem, PushOutcome, PushStatus, QueueName, Tenant};
use crate::metrics::Metrics;
use crate::segment::{open_blob, txn_key, BlobError, Codec, FrameIter, NewFrame, SegmentBuilder};

/// A stale answer is followed by a call that holds the lock, so two appends are the norm;
/// more means windows were evicted meanwhile. Past this many appends (each after at most
/// one round that reads the window's hits), the push fails rather than spin.
const MAX_ROUNDS: usize = 6;

/// An item of the batch: (request, item within it).
type Ref = (usize, usize);

/// The requests of one tenant staged together, and where their dedup windows live.
pub(super) struct Request<'a> {
    pub(super) tenant: &'a Tenant,
    pub(super) requests: &'a [Staged<'a>],
    pub(super) windows: &'a Arc<DedupWindows>,
    pub(super) default_window_secs: i32,
    pub(super) zstd_level: i32,
    pub(super) metrics: &'a Metrics,
}

impl<'a> Request<'a> {
    /// The requests of `tenant` as `broker`'s windows and settings see them.
    pub(super) fn new(
        broker: &'a Broker,
        tenant: &'a Tenant,
        requests: &'a [Staged<'a>],
        zstd_level: i32,
    ) -> Self {
        Request {
            tenant,
            requests,
            windows: &broker.dedup,
            default_window_secs: broker.config.push.dedup_window_secs,
            zstd_level,
            metrics: &broker.metrics,
        }
    }

    fn item(&self, (j, i): Ref) -> &PushItem {
        &self.requests[j].items[i]
    }
    fn txn(&self, (j, i): Ref) -> &str {
        &self.requests[j].prepared.txn_ids[i]
    }
    fn key(&self, (j, i): Ref) -> i64 {
        self.requests[j].prepared.keys[i]
    }
    fn message_id(&self, (j, i): Ref) -> uuid::Uuid {
        self.requests[j].prepared.message_ids[i]
    }
    fn sealed(&self, (j, i): Ref) -> Option<&[u8]> {
        self.requests[j].prepared.sealed[i].as_deref()
    }
    /// The prebuilt group an item came in: (request, group).
    fn group_of(&self, (j, i): Ref) -> Option<(usize, usize)> {
        self.requests[j].prepared.segment_of[i].map(|s| (j, s))
    }
}

/// Outcomes per request, per item.
pub(super) type Outcomes = [Vec<Option<PushOutcome>>];

/// Items per (queue, partition), in (queue, partition) order: the order appends lock
/// partitions in, so two concurrent pushes over the same partitions cannot deadlock.
pub(super) type Groups<'a> = BTreeMap<(&'a QueueName, &'a PartitionName), Vec<Ref>>;

/// Segments already built (compressed) per (queue, partition): what a declined
/// [`append_alone`] hands to the transaction that follows, so no segment is compressed twice.
pub(super) type Builds<'a> = HashMap<(&'a QueueName, &'a PartitionName), Built<'a>>;

/// Appends each (queue, partition) group inside `tx` and answers every item of it: the
/// group's appends first (see [`append_partition`]), then, from how they ended, the stored
/// or refused items and the repeats within the batch.
pub(super) async fn append_groups<'a>(
    tx: &DataTransaction<'_>,
    req: &Request<'a>,
    groups: &Groups<'a>,
    mut builds: Builds<'a>,
    outcomes: &mut Outcomes,
) -> Result<(), PushError> {
    for (&(queue, partition), refs) in groups {
        let (pending, repeats) = split_repeats(req, refs);
        let built = builds.remove(&(queue, partition));
        match append_partition(tx, req, queue, partition, pending, built, outcomes).await? {
            Ended::Stored(stored_items, stored) => {
                answer_stored(req, &stored_items, &stored, outcomes)
            }
            Ended::Full(refused, partition_id, max_size) => {
                answer_full(req, &refused, partition_id, max_size, outcomes)
            }
            Ended::Duplicates => {}
        }
        answer_repeats(&repeats, outcomes);
    }
    Ok(())
}

/// How one partition's pending items ended in [`append_partition`]; the caller answers
/// them, after the database work.
enum Ended {
    /// These items were stored, at consecutive offsets.
    Stored(Vec<Ref>, Appended),
    /// These items were refused for the queue's maxSize: (items, partition id, maxSize).
    Full(Vec<Ref>, i64, i32),
    /// Every item proved a duplicate (answered by [`confirm_duplicates`]).
    Duplicates,
}

/// The push (or combined pushes) in one round trip to PostgreSQL (see
/// [`single_append::append_alone`]): when no partition's window holds any of the items'
/// transaction ids and each partition's items make one segment, all the segments are
/// appended and committed by one statement. `Ok(false)` when the push is not of that shape
/// or the statement declined: nothing was stored or answered, the segments it built are in
/// `builds`, and the caller runs its transaction as usual.
pub(super) async fn append_alone<'a>(
    conn: &mut PgConn,
    req: &Request<'a>,
    groups: &Groups<'a>,
    builds: &mut Builds<'a>,
    outcomes: &mut Outcomes,
) -> Result<bool, PushError> {
    struct Ready<'a> {
        queue: &'a QueueName,
        partition: &'a PartitionName,
        known: Option<i64>,
        repeats: Vec<(Ref, Ref)>,
        keys: Vec<i64>,
        built: Built<'a>,
    }
    let mut ready: Vec<Ready<'a>> = Vec::with_capacity(groups.len());
    let declined = |ready: Vec<Ready<'a>>, builds: &mut Builds<'a>| {
        builds.extend(ready.into_iter().map(|r| ((r.queue, r.partition), r.built)));
        Ok(false)
    };
    for (&(queue, partition), refs) in groups {
        let (pending, repeats) = split_repeats(req, refs);
        let key = WindowKey::new(req.tenant, queue, partition);
        let keys: Vec<i64> = pending.iter().map(|&r| req.key(r)).collect();
        if req.windows.find(&key, &keys).iter().any(Option::is_some) {
            return declined(ready, builds);
        }
        let built = build(req, &pending)?;
        let one_segment = built.segments.len() == 1;
        ready.push(Ready {
            queue,
            partition,
            known: req.windows.known(&key),
            repeats,
            keys,
            built,
        });
        if !one_segment {
            return declined(ready, builds);
        }
    }
    let segments: Vec<Vec<NewSegment<'_>>> = ready.iter().map(|r| r.built.new_segments()).collect();
    let appends: Vec<PartitionAppend<'_>> = ready
        .iter()
        .zip(&segments)
        .map(|(r, segments)| PartitionAppend {
            tenant: req.tenant.as_str(),
            queue: r.queue.as_str(),
            partition: r.partition.as_str(),
            known_last: r.known,
            default_window_secs: req.default_window_secs,
            segments,
            keys: &r.keys,
            producer: None,
        })
        .collect();
    let answered = single_append::append_alone(conn, &appends).await?;
    drop(appends);
    let Some(answers) = answered else {
        return declined(ready, builds);
    };
    Metrics::bump(&req.metrics.push_alone_commits);
    for (r, stored) in ready.iter().zip(answers) {
        Metrics::bump(&req.metrics.push_single_appends);
        answer_stored(req, &r.built.items, &stored, outcomes);
        answer_repeats(&r.repeats, outcomes);
    }
    Ok(true)
}

/// Dedup within the batch: the first occurrence of each transaction id is pending, later
/// repeats point at it.
fn split_repeats(req: &Request<'_>, refs: &[Ref]) -> (Vec<Ref>, Vec<(Ref, Ref)>) {
    let mut first_of: HashMap<TxnKey<'_>, Ref, foldhash::fast::RandomState> =
        HashMap::with_capacity_and_hasher(refs.len(), Default::default());
    let mut repeats: Vec<(Ref, Ref)> = Vec::new();
    let mut pending: Vec<Ref> = Vec::with_capacity(refs.len());
    for &r in refs {
        let key = TxnKey {
            hash: req.key(r),
            text: req.txn(r),
        };
        match first_of.entry(key) {
            Entry::Occupied(first) => repeats.push((r, *first.get())),
            Entry::Vacant(slot) => {
                slot.insert(r);
                pending.push(r);
            }
        }
    }
    (pending, repeats)
}

/// A transaction id, hashed by the key the request computed for it already (eight bytes
/// to hash instead of the id's text) and compared by its text, so a collision of keys
/// never makes two ids one.
struct TxnKey<'a> {
    hash: i64,
    text: &'a str,
}

impl PartialEq for TxnKey<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.text == other.text
    }
}

impl Eq for TxnKey<'_> {}

impl std::hash::Hash for TxnKey<'_> {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        state.write_i64(self.hash);
    }
}

/// Answers each repeat as its first occurrence was answered: `duplicate`, or refused for
/// maxSize as it was.
fn answer_repeats(repeats: &[(Ref, Ref)], outcomes: &mut Outcomes) {
    for &((j, i), (fj, fi)) in repeats {
        let original = outcomes[fj][fi]
            .clone()
            .expect("the first occurrence was resolved above");
        let status = match original.status {
            full @ PushStatus::Full { .. } => full,
            _ => PushStatus::Duplicate,
        };
        outcomes[j][i] = Some(PushOutcome { status, ..original });
    }
}

/// Answers `pending` as queued at consecutive offsets after `stored.previous_last`.
fn answer_stored(req: &Request<'_>, pending: &[Ref], stored: &Appended, outcomes: &mut Outcomes) {
    for (k, &(j, i)) in pending.iter().enumerate() {
        outcomes[j][i] = Some(PushOutcome {
            status: PushStatus::Queued,
            transaction_id: req.txn((j, i)).to_owned(),
            message_id: req.message_id((j, i)),
            partition_id: stored.partition_id,
            offset: stored.previous_last + 1 + k as i64,
            txn_key: req.key((j, i)),
            dedup_window_secs: stored.window_secs,
        });
    }
}

/// Answers `refused` as not stored: the queue holds `max_size` messages already.
fn answer_full(
    req: &Request<'_>,
    refused: &[Ref],
    partition_id: i64,
    max_size: i32,
    outcomes: &mut Outcomes,
) {
    for &(j, i) in refused {
        outcomes[j][i] = Some(PushOutcome {
            status: PushStatus::Full { max_size },
            transaction_id: req.txn((j, i)).to_owned(),
            message_id: req.message_id((j, i)),
            partition_id,
            offset: -1,
            txn_key: req.key((j, i)),
            dedup_window_secs: 0,
        });
    }
}

/// Stores `pending` (items of one partition, request order, no repeats among them) minus
/// the ones its dedup window proves duplicate, and says how they ended; the duplicates are
/// answered here, the rest by the caller.
/// `built`: its segments when they were built already (see [`Builds`]).
///
/// A round either reads the stored segments the window's hits point at (a hit checked
/// once is not read again) or, when no hit is left to check, builds the segments and
/// appends: the database work comes after what the round decides in memory.
async fn append_partition<'a>(
    tx: &DataTransaction<'_>,
    req: &Request<'a>,
    queue: &QueueName,
    partition: &PartitionName,
    mut pending: Vec<Ref>,
    mut built: Option<Built<'a>>,
    outcomes: &mut Outcomes,
) -> Result<Ended, PushError> {
    let key = WindowKey::new(req.tenant, queue, partition);
    let mut known = req.windows.known(&key);
    let mut overlay: Option<Overlay> = None;
    // Hits read already and found not to hold their item's transaction id.
    let mut checked: Vec<(Ref, Hit)> = Vec::new();
    for _ in 0..2 * MAX_ROUNDS {
        // The overlay extends the node's window from `lo` on: useless if the window no
        // longer reaches `lo` (forgotten meanwhile); then the next call reads it whole.
        if let Some(lo) = overlay.as_ref().and_then(|o| o.lo) {
            if req.windows.known(&key).map_or(true, |shared| shared < lo) {
                overlay = None;
                known = None;
            }
        }
        let asked: Vec<i64> = pending.iter().map(|&r| req.key(r)).collect();
        let mut hits = req.windows.find(&key, &asked);
        if let Some(overlay) = &overlay {
            overlay.find(&asked, &mut hits);
        }
        if !checked.is_empty() {
            for (r, hit) in pending.iter().zip(hits.iter_mut()) {
                if hit.is_some_and(|h| checked.contains(&(*r, h))) {
                    *hit = None;
                }
            }
        }
        let to_check = hits.iter().any(Option::is_some);
        if !to_check && !built.as_ref().is_some_and(|b| b.items == pending) {
            built = Some(build(req, &pending)?);
        }
        if to_check {
            confirm_duplicates(tx, req, &pending, &hits, outcomes).await?;
            for (&(j, i), hit) in pending.iter().zip(&hits) {
                if let (Some(hit), None) = (hit, &outcomes[j][i]) {
                    checked.push(((j, i), *hit));
                }
            }
            pending.retain(|&(j, i)| outcomes[j][i].is_none());
            if pending.is_empty() {
                return Ok(Ended::Duplicates);
            }
            continue;
        }
        let segments = built.as_ref().expect("built just above").new_segments();
        let seg_keys: Vec<i64> = pending.iter().map(|&r| req.key(r)).collect();
        let answer = tx
            .append(&PartitionAppend {
                tenant: req.tenant.as_str(),
                queue: queue.as_str(),
                partition: partition.as_str(),
                known_last: known,
                default_window_secs: req.default_window_secs,
                segments: &segments,
                keys: &seg_keys,
                producer: None,
            })
            .await?;
        match answer {
            AppendOutcome::Stale {
                partition_id,
                last_offset,
                window_secs,
                segments,
            } => {
                debug!(queue = %queue, partition = %partition, segments = segments.len(), "push learned segments stored by others");
                let learned = segments
                    .into_iter()
                    .map(learned_from)
                    .collect::<Result<Vec<_>, _>>()?;
                let asked_with = known;
                known = Overlay::extend(
                    &mut overlay,
                    asked_with,
                    partition_id,
                    window_secs,
                    &learned,
                )
                .then_some(last_offset);
                let (windows, key) = (req.windows.clone(), key.clone());
                tx.after_commit(move || {
                    windows.learn(
                        &key,
                        asked_with,
                        partition_id,
                        last_offset,
                        window_secs,
                        learned,
                    );
                });
            }
            AppendOutcome::Stored {
                partition_id,
                previous_last,
                window_secs,
                single_statement,
            } => {
                Metrics::bump(if single_statement {
                    &req.metrics.push_single_appends
                } else {
                    &req.metrics.push_function_appends
                });
                let stored = Appended {
                    partition_id,
                    previous_last,
                    window_secs,
                };
                return Ok(Ended::Stored(pending, stored));
            }
            AppendOutcome::Full {
                partition_id,
                max_size,
            } => return Ok(Ended::Full(pending, partition_id, max_size)),
        }
    }
    Err(PushError::WindowRace {
        queue: queue.to_string(),
        partition: partition.to_string(),
    })
}

/// What one push learned from stale answers inside its transaction, on top of the node's
/// window: the keys of the partition's offsets above `lo` (everything when `lo` is None)
/// within the window's length, latest offset per key.
struct Overlay {
    lo: Option<i64>,
    partition_id: i64,
    index: HashMap<i64, i64, foldhash::fast::RandomState>,
}

impl Overlay {
    /// Adds a stale answer to `asked_with` (the `known` its call sent): starts the overlay
    /// at `asked_with` on the first one, extends it after. False when the answer cannot be
    /// used (no window, or the partition changed): the next call must read the whole window.
    fn extend(
        overlay: &mut Option<Overlay>,
        asked_with: Option<i64>,
        partition_id: i64,
        window_secs: i32,
        learned: &[Learned],
    ) -> bool {
        if window_secs <= 0
            || overlay
                .as_ref()
                .is_some_and(|o| o.partition_id != partition_id)
        {
            *overlay = None;
            return false;
        }
        let length = Duration::from_secs(window_secs as u64);
        let o = overlay.get_or_insert_with(|| Overlay {
            lo: asked_with,
            partition_id,
            index: HashMap::default(),
        });
        let mut learned: Vec<&Learned> = learned
            .iter()
            .filter(|(_, age, _)| *age <= length)
            .collect();
        learned.sort_by_key(|(base, _, _)| *base);
        for (base, _, keys) in learned {
            for (k, h) in keys.iter().enumerate() {
                o.index.insert(*h, base + k as i64);
            }
        }
        true
    }

    /// Fills `hits` (the node window's answer for `asked`) with what the overlay holds: its
    /// offsets are newer than the window's.
    fn find(&self, asked: &[i64], hits: &mut [Option<Hit>]) {
        for (h, hit) in asked.iter().zip(hits.iter_mut()) {
            if let Some(&offset) = self.index.get(h) {
                *hit = Some(Hit {
                    partition_id: self.partition_id,
                    offset,
                });
            }
        }
    }
}

/// Segments of one partition's pending items: (count, codec, bytes) per run.
pub(super) struct Built<'a> {
    items: Vec<Ref>,
    segments: Vec<(i32, Codec, Cow<'a, [u8]>)>,
}

impl Built<'_> {
    /// The segments as an append takes them.
    fn new_segments(&self) -> Vec<NewSegment<'_>> {
        self.segments
            .iter()
            .map(|(count, codec, bytes)| NewSegment {
                count: *count,
                codec: codec.as_i16(),
                bytes,
            })
            .collect()
    }
}

/// One segment per run of items from the same prebuilt group (or one for everything when
/// nothing is prebuilt). A prebuilt group is stored as the client sent it only when all of
/// its items are still pending; otherwise it is rebuilt (recompressed by us).
fn build<'a>(req: &Request<'a>, pending: &[Ref]) -> Result<Built<'a>, PushError> {
    let mut segments = Vec::new();
    for run in pending.chunk_by(|a, b| req.group_of(*a) == req.group_of(*b)) {
        let requests = req.requests;
        let as_sent = req
            .group_of(run[0])
            .map(|(j, s)| &requests[j].prepared.prebuilt[s])
            .filter(|seg| seg.message_ids.len() == run.len());
        if let Some(seg) = as_sent {
            segments.push((run.len() as i32, Codec::Zstd, Cow::Borrowed(&seg.bytes[..])));
            continue;
        }
        let mut builder = SegmentBuilder::new();
        for &r in run {
            let mut frame = NewFrame {
                message_id: req.message_id(r),
                trace_id: req.item(r).trace_id,
                transaction_id: req.txn(r),
                producer: req.item(r).producer.as_deref(),
                payload: &req.item(r).payload,
            };
            let pushed = match req.sealed(r) {
                None => builder.push(&frame),
                Some(sealed) => {
                    frame.payload = sealed;
                    builder.push_sealed(&frame)
                }
            };
            pushed.map_err(|source| PushError::Frame { index: r.1, source })?;
        }
        let blob = builder.finish(req.zstd_level)?;
        segments.push((run.len() as i32, blob.codec, Cow::Owned(blob.bytes)));
    }
    Ok(Built {
        items: pending.to_vec(),
        segments,
    })
}

/// Reads the stored frames the window's hits point at and answers `duplicate` for the
/// items whose transaction id really is there (a bare key match is never enough).
async fn confirm_duplicates(
    tx: &DataTransaction<'_>,
    req: &Request<'_>,
    pending: &[Ref],
    hits: &[Option<Hit>],
    outcomes: &mut Outcomes,
) -> Result<(), PushError> {
    // The stored segments holding the hits, each read once: (partition, base, end, bytes),
    // and per hit, which of them holds it.
    let mut segments: Vec<(i64, i64, i64, Vec<u8>)> = Vec::new();
    let mut wanted: Vec<(usize, Ref, i64)> = Vec::new();
    for (&r, hit) in pending.iter().zip(hits) {
        let Some(hit) = hit else {
            continue;
        };
        let held = segments.iter().position(|(pid, base, end, _)| {
            *pid == hit.partition_id && *base <= hit.offset && hit.offset <= *end
        });
        let k = match held {
            Some(k) => k,
            None => {
                let Some(segment) = tx.read_segment(hit.partition_id, hit.offset).await? else {
                    continue; // gone (the queue was deleted): not a duplicate any more
                };
                let raw = open_blob(Codec::from_i16(segment.codec)?, &segment.bytes)?.into_owned();
                segments.push((hit.partition_id, segment.base, segment.end, raw));
                segments.len() - 1
            }
        };
        wanted.push((k, r, hit.offset));
    }
    // Each segment's frames parsed once, then every hit it holds compared.
    for (k, (partition_id, base, _, raw)) in segments.iter().enumerate() {
        let frames = FrameIter::new(raw)
            .collect::<Result<Vec<_>, _>>()
            .map_err(BlobError::from)?;
        for &(_, (j, i), offset) in wanted.iter().filter(|w| w.0 == k) {
            let Some(frame) = usize::try_from(offset - base)
                .ok()
                .and_then(|n| frames.get(n))
            else {
                continue;
            };
            if frame.transaction_id == req.txn((j, i)) {
                outcomes[j][i] = Some(PushOutcome {
                    status: PushStatus::Duplicate,
                    transaction_id: req.txn((j, i)).to_owned(),
                    message_id: frame.message_id,
                    partition_id: *partition_id,
                    offset,
                    txn_key: req.key((j, i)),
                    dedup_window_secs: 0,
                });
            }
        }
    }
    Ok(())
}

/// A segment of a stale answer as the window holds it; the keys of a segment stored
/// without them are computed from its frames.
fn learned_from(segment: WindowSegment) -> Result<Learned, PushError> {
    let age = Duration::from_millis(segment.age_ms.max(0) as u64);
    let keys = match (segment.keys, segment.blob) {
        (Some(keys), _) => keys,
        (None, Some((codec, bytes))) => {
            let raw = open_blob(Codec::from_i16(codec)?, &bytes)?;
            FrameIter::new(&raw)
                .map(|f| f.map(|f| txn_key(f.transaction_id)))
                .collect::<Result<Vec<_>, _>>()
                .map_err(BlobError::from)?
        }
        (None, None) => Vec::new(),
    };
    debug_assert!(keys.is_empty() || keys.len() as i64 == segment.end - segment.base + 1);
    Ok((segment.base, age, keys))
}
