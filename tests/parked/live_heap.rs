//! A global allocator that counts the process's live heap bytes (every thread), so a test
//! can tell what many parked requests hold: live bytes after parking them, less live bytes
//! before, divided by their number. It also counts live blocks by size, so a failed bound
//! can say which sizes grew (a buffer, a header map, a future).

use std::alloc::{GlobalAlloc, Layout, System};
use std::fmt::Write;
use std::sync::atomic::{AtomicIsize, Ordering};

/// The system allocator, counting live bytes.
pub struct LiveHeap;

/// Width of a size class of [`BY_SIZE`], bytes.
const CLASS: usize = 16;
/// Size classes; the last one counts every block of `CLASS * (CLASSES - 1)` bytes or more.
const CLASSES: usize = 4097;

static LIVE: AtomicIsize = AtomicIsize::new(0);
static BY_SIZE: [AtomicIsize; CLASSES] = [const { AtomicIsize::new(0) }; CLASSES];

/// Heap bytes allocated and not yet freed, by every thread of the process.
pub fn live_bytes() -> isize {
    LIVE.load(Ordering::Relaxed)
}

/// Live blocks per size class, now.
pub fn blocks_by_size() -> Vec<isize> {
    BY_SIZE.iter().map(|c| c.load(Ordering::Relaxed)).collect()
}

/// The size classes whose live blocks grew most in bytes between two [`blocks_by_size`],
/// per one of `items`: one line each, largest first.
pub fn growth(before: &[isize], after: &[isize], items: usize) -> String {
    let mut grown: Vec<(usize, isize)> = before
        .iter()
        .zip(after)
        .enumerate()
        .map(|(class, (b, a))| (class * CLASS, a - b))
        .filter(|(_, blocks)| *blocks > 0)
        .collect();
    grown.sort_by_key(|(size, blocks)| -(*size as isize * blocks));
    let mut out = String::new();
    for (size, blocks) in grown.into_iter().take(12) {
        let per_item = size as f64 * blocks as f64 / items as f64;
        let _ = writeln!(
            out,
            "  blocks of {size}..{} bytes: {blocks} more, about {per_item:.0} bytes per item",
            size + CLASS
        );
    }
    out
}

fn count(size: usize, sign: isize) {
    LIVE.fetch_add(sign * size as isize, Ordering::Relaxed);
    BY_SIZE[(size / CLASS).min(CLASSES - 1)].fetch_add(sign, Ordering::Relaxed);
}

// SAFETY: every call is forwarded unchanged to `System`; only the counters change.
unsafe impl GlobalAlloc for LiveHeap {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = System.alloc(layout);
        if !p.is_null() {
            count(layout.size(), 1);
            crate::sites::allocated(p, layout.size());
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let p = System.alloc_zeroed(layout);
        if !p.is_null() {
            count(layout.size(), 1);
            crate::sites::allocated(p, layout.size());
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        crate::sites::freed(ptr);
        System.dealloc(ptr, layout);
        count(layout.size(), -1);
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = System.realloc(ptr, layout, new_size);
        if !p.is_null() {
            count(new_size, 1);
            count(layout.size(), -1);
            crate::sites::freed(ptr);
            crate::sites::allocated(p, new_size);
        }
        p
    }
}
