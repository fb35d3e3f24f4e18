//! Where held payloads live: a mimalloc heap of their own, allocating only in an
//! exclusive arena of the broker-wide cap's size (`QUEEN_EPHEMERAL_MAX_BYTES`).
//!
//! Counting bytes alone did not bound resident memory: payloads parsed on one HTTP worker
//! and dropped on another leave freed blocks in the first worker's pages, and size
//! classes round every block up, so a flood at a 64 MiB cap grew resident memory by about
//! twice the cap (README "Ephemeral queues"). Inside an arena of its own, everything the
//! payloads ever occupy (live blocks, rounding, freed pages not yet returned) stays within
//! the arena's size; a push that finds it full is refused like one over the cap (or drops
//! old messages under `dropOldest`). mimalloc 3's heaps allocate and free from any thread.
//!
//! A heap is never deleted: mimalloc 3.3.2 crashes when a heap is deleted while a thread
//! that allocated from it exits (the exit merges its statistics into the heap pointer the
//! deletion has just cleared; a test process stopping a broker hit it, as
//! `a_store_dropped_as_its_threads_exit_is_safe` does). A dropped store's heap is kept for
//! the next store of its arena's size instead, so a broker makes one heap and a test
//! process as many as it runs brokers at once.

use std::ffi::c_void;
use std::ptr::NonNull;
use std::sync::Mutex;

use libmimalloc_sys as mi;

/// The smallest arena mimalloc accepts (32 MiB); a smaller cap still reserves this much
/// address space, but the byte budget keeps the contents to the cap.
const MIN_ARENA_BYTES: u64 = 32 << 20;

/// The heaps of dropped stores, for the next stores of their arena's size.
static SPARE_HEAPS: Mutex<Vec<SpareHeap>> = Mutex::new(Vec::new());

/// A dropped store's heap, with the size of its arena (`None`: an ordinary heap).
struct SpareHeap {
    heap: NonNull<mi::mi_heap_t>,
    arena_bytes: Option<u64>,
}

// SAFETY: a heap handle is used from any thread (see `PayloadStore`).
unsafe impl Send for SpareHeap {}

/// Takes a spare heap whose arena is `arena_bytes` in size, if there is one.
fn spare_heap(arena_bytes: Option<u64>) -> Option<NonNull<mi::mi_heap_t>> {
    let mut spare = SPARE_HEAPS
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let at = spare.iter().position(|s| s.arena_bytes == arena_bytes)?;
    Some(spare.swap_remove(at).heap)
}

/// The payload heap.
#[derive(Debug)]
pub struct PayloadStore {
    heap: NonNull<mi::mi_heap_t>,
    /// The arena's size in bytes, or `None` when no arena could be reserved and the heap
    /// takes memory like any other (bounded by the byte budget only).
    arena_bytes: Option<u64>,
}

// SAFETY: mimalloc 3's first-class heaps allocate from any thread, and any block is freed
// from any thread with `mi_free` (see the heap section of its `mimalloc.h`).
unsafe impl Send for PayloadStore {}
// SAFETY: as above; the handle is never written after it is made.
unsafe impl Sync for PayloadStore {}

impl PayloadStore {
    /// A heap in an exclusive arena of `cap` bytes (at least 32 MiB): a dropped store's
    /// of that size, or a new one. Where the arena cannot be reserved (address space, or
    /// mimalloc's limit of arenas per process) the heap is an ordinary one.
    pub fn new(cap: u64) -> Self {
        let size = usize::try_from(cap.max(MIN_ARENA_BYTES)).unwrap_or(usize::MAX);
        if let Some(heap) = spare_heap(Some(size as u64)) {
            return PayloadStore {
                heap,
                arena_bytes: Some(size as u64),
            };
        }
        let mut arena: mi::mi_arena_id_t = std::ptr::null_mut();
        // SAFETY: plain FFI calls; `arena` is written only on success.
        let reserved = unsafe { mi::mi_reserve_os_memory_ex(size, false, false, true, &mut arena) };
        let in_arena = if reserved == 0 {
            // SAFETY: `arena` names the exclusive arena just reserved.
            NonNull::new(unsafe { mi::mi_heap_new_in_arena(arena) })
        } else {
            None
        };
        match in_arena {
            Some(heap) => PayloadStore {
                heap,
                arena_bytes: Some(size as u64),
            },
            None => PayloadStore {
                heap: spare_heap(None).unwrap_or_else(|| {
                    // SAFETY: plain FFI call.
                    NonNull::new(unsafe { mi::mi_heap_new() })
                        .expect("mimalloc could not make a heap")
                }),
                arena_bytes: None,
            },
        }
    }

    /// The arena's size, when the payloads have one of their own.
    pub fn arena_bytes(&self) -> Option<u64> {
        self.arena_bytes
    }

    /// Bytes the heap gives a payload of `len` bytes (its size class).
    pub fn block_bytes(&self, len: usize) -> u64 {
        // SAFETY: a pure function of its argument.
        unsafe { mi::mi_good_size(len.max(1)) as u64 }
    }

    /// A copy of `text` in the heap, or `None` when the arena is full.
    pub fn store(&self, text: &str) -> Option<StoredPayload> {
        let len = text.len();
        // SAFETY: the heap is alive for `self`'s lifetime; a block of `len.max(1)` bytes
        // is written with exactly `len` bytes.
        unsafe {
            let mut block = mi::mi_heap_malloc(self.heap.as_ptr(), len.max(1));
            if block.is_null() {
                // Blocks freed by other threads are returned to their pages on collection.
                mi::mi_heap_collect(self.heap.as_ptr(), false);
                block = mi::mi_heap_malloc(self.heap.as_ptr(), len.max(1));
            }
            let ptr = NonNull::new(block.cast::<u8>())?;
            std::ptr::copy_nonoverlapping(text.as_ptr(), ptr.as_ptr(), len);
            Some(StoredPayload { ptr, len })
        }
    }
}

impl Drop for PayloadStore {
    /// Keeps the heap for the next store of its size (never deleted: see the module's
    /// comment). Blocks still alive stay where they are and are freed by their `mi_free`.
    fn drop(&mut self) {
        SPARE_HEAPS
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .push(SpareHeap {
                heap: self.heap,
                arena_bytes: self.arena_bytes,
            });
    }
}

/// One payload's JSON text in the [`PayloadStore`], freed when dropped.
pub struct StoredPayload {
    ptr: NonNull<u8>,
    len: usize,
}

// SAFETY: the block is owned by this value alone and freed once, from any thread.
unsafe impl Send for StoredPayload {}
// SAFETY: only read through `&self`.
unsafe impl Sync for StoredPayload {}

impl StoredPayload {
    /// The payload's JSON text.
    pub fn as_str(&self) -> &str {
        // SAFETY: the block holds `len` bytes copied from a `&str` in `store`.
        unsafe {
            std::str::from_utf8_unchecked(std::slice::from_raw_parts(self.ptr.as_ptr(), self.len))
        }
    }

    /// Bytes of the payload's text.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True for an empty text (never a JSON value, but allowed).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl Drop for StoredPayload {
    fn drop(&mut self) {
        // SAFETY: the block came from `mi_heap_malloc` and is freed exactly once.
        unsafe { mi::mi_free(self.ptr.as_ptr().cast::<c_void>()) }
    }
}

impl std::fmt::Debug for StoredPayload {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "StoredPayload({} bytes)", self.len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stored_payload_reads_back_as_written() {
        let store = PayloadStore::new(1 << 20);
        let stored = store.store(r#"{"a":[1,2,3]}"#).expect("room");
        assert_eq!(stored.as_str(), r#"{"a":[1,2,3]}"#);
        assert_eq!(stored.len(), 13);
        let empty = store.store("").expect("room");
        assert!(empty.is_empty());
    }

    #[test]
    fn the_arena_refuses_past_its_size() {
        let store = PayloadStore::new(32 << 20);
        let size = store.arena_bytes().expect("an arena of its own");
        let chunk = "x".repeat(64 << 10);
        let mut held = Vec::new();
        while let Some(p) = store.store(&chunk) {
            held.push(p);
            assert!(
                (held.len() * chunk.len()) as u64 <= size,
                "the arena held more than its size"
            );
        }
        assert!(!held.is_empty(), "the arena took nothing");
        // Freeing makes room again.
        held.truncate(held.len() / 2);
        assert!(store.store(&chunk).is_some());
    }

    /// Deleting the heap here crashed the process (SIGSEGV in mimalloc's thread exit)
    /// within a few hundred rounds.
    #[test]
    fn a_store_dropped_as_its_threads_exit_is_safe() {
        const THREADS: usize = 4;
        for _ in 0..1_000 {
            let store = std::sync::Arc::new(PayloadStore::new(1 << 20));
            let stored = std::sync::Arc::new(std::sync::Barrier::new(THREADS + 1));
            let threads: Vec<_> = (0..THREADS)
                .map(|_| {
                    let (store, stored) = (store.clone(), stored.clone());
                    std::thread::spawn(move || {
                        let payload = store.store("{}").expect("room");
                        drop((payload, store));
                        stored.wait();
                    })
                })
                .collect();
            stored.wait();
            drop(store);
            for t in threads {
                t.join().expect("the thread does not panic");
            }
        }
    }

    #[test]
    fn a_dropped_stores_heap_serves_the_next_store_of_its_size() {
        // An arena size no other test uses, so no other test takes the spare heap.
        let cap = 40 << 20;
        let first = PayloadStore::new(cap);
        let heap = first.heap;
        drop(first);
        let second = PayloadStore::new(cap);
        assert_eq!(second.heap, heap);
        assert_eq!(second.arena_bytes, Some(cap));
        assert_eq!(second.store("{}").expect("room").as_str(), "{}");
    }
}
