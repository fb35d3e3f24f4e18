//! A global allocator that measures, on the calling thread only, the peak of live heap bytes
//! during one call: the fuzz loop uses it to hold every decoder to a memory bound that is a
//! fixed multiple of its input. Other threads (none in this binary) are not counted.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

/// The system allocator, counting this thread's live bytes while [`measure`] runs.
pub struct PeakAlloc;

thread_local! {
    static ON: Cell<bool> = const { Cell::new(false) };
    static LIVE: Cell<isize> = const { Cell::new(0) };
    static PEAK: Cell<isize> = const { Cell::new(0) };
}

fn note(delta: isize) {
    // `try_with`: the allocator may run while thread-locals are being torn down.
    let _ = ON.try_with(|on| {
        if on.get() {
            LIVE.with(|live| {
                let now = live.get() + delta;
                live.set(now);
                PEAK.with(|peak| peak.set(peak.get().max(now)));
            });
        }
    });
}

// SAFETY: every call is forwarded unchanged to `System`; only counters change.
unsafe impl GlobalAlloc for PeakAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = System.alloc(layout);
        if !p.is_null() {
            note(layout.size() as isize);
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let p = System.alloc_zeroed(layout);
        if !p.is_null() {
            note(layout.size() as isize);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout);
        note(-(layout.size() as isize));
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = System.realloc(ptr, layout, new_size);
        if !p.is_null() {
            // A move holds both blocks for a moment: count the new one before the old goes.
            note(new_size as isize);
            note(-(layout.size() as isize));
        }
        p
    }
}

/// Runs `f` and returns its result with the peak of heap bytes it held at once (bytes it
/// allocated and still holds at the end, such as its result, count too).
pub fn measure<T>(f: impl FnOnce() -> T) -> (T, usize) {
    LIVE.with(|l| l.set(0));
    PEAK.with(|p| p.set(0));
    ON.with(|on| on.set(true));
    let out = f();
    ON.with(|on| on.set(false));
    (out, PEAK.with(Cell::get).max(0) as usize)
}
