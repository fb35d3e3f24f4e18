//! Where the live heap blocks come from: with `PARKED_HEAP_SITES=1`, the counting allocator
//! records each block allocated while [`start`]ed with its caller's return addresses, and
//! [`report`] groups the blocks still live by those addresses, largest first, with one
//! resolved backtrace each. A diagnostic for finding what a parked pop holds (README,
//! "Parked long-polls"); off unless asked for, as it slows every allocation, and with it
//! on the heap bound of `parked_pop.rs` fails, as the records are counted too.

use std::cell::Cell;
use std::collections::HashMap;
use std::fmt::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

/// Return addresses kept per block (the allocator's own frames included).
const DEPTH: usize = 40;

type Stack = [usize; DEPTH];

static ON: AtomicBool = AtomicBool::new(false);
static LIVE: Mutex<Option<HashMap<usize, (usize, Stack)>>> = Mutex::new(None);
static FIRST: Mutex<Option<HashMap<Stack, String>>> = Mutex::new(None);

thread_local! {
    static INSIDE: Cell<bool> = const { Cell::new(false) };
}

extern "C" {
    fn backtrace(buffer: *mut *mut std::ffi::c_void, size: std::ffi::c_int) -> std::ffi::c_int;
}

/// Starts recording when `PARKED_HEAP_SITES` is set.
pub fn start() {
    if std::env::var_os("PARKED_HEAP_SITES").is_some() {
        *LIVE.lock().unwrap() = Some(HashMap::new());
        *FIRST.lock().unwrap() = Some(HashMap::new());
        ON.store(true, Ordering::SeqCst);
    }
}

fn guarded(f: impl FnOnce()) {
    if !ON.load(Ordering::Relaxed) {
        return;
    }
    if INSIDE.with(|i| i.replace(true)) {
        return;
    }
    f();
    INSIDE.with(|i| i.set(false));
}

/// Records a block allocated at `ptr`.
pub fn allocated(ptr: *mut u8, size: usize) {
    guarded(|| {
        let mut stack: Stack = [0; DEPTH];
        // SAFETY: glibc's backtrace writes at most DEPTH addresses into the array.
        unsafe { backtrace(stack.as_mut_ptr().cast(), DEPTH as std::ffi::c_int) };
        let mut first = FIRST.lock().unwrap();
        if let Some(first) = first.as_mut() {
            first
                .entry(stack)
                .or_insert_with(|| std::backtrace::Backtrace::force_capture().to_string());
        }
        drop(first);
        if let Some(live) = LIVE.lock().unwrap().as_mut() {
            live.insert(ptr as usize, (size, stack));
        }
    });
}

/// Forgets a freed block.
pub fn freed(ptr: *mut u8) {
    guarded(|| {
        if let Some(live) = LIVE.lock().unwrap().as_mut() {
            live.remove(&(ptr as usize));
        }
    });
}

/// The live blocks recorded since [`start`], grouped by site, per one of `items`.
pub fn report(items: usize) -> String {
    if !ON.swap(false, Ordering::SeqCst) {
        return String::new();
    }
    let live = LIVE.lock().unwrap().take().unwrap_or_default();
    let first = FIRST.lock().unwrap().take().unwrap_or_default();
    let mut by_site: HashMap<Stack, (usize, usize)> = HashMap::new();
    for (size, stack) in live.values() {
        let e = by_site.entry(*stack).or_default();
        e.0 += size;
        e.1 += 1;
    }
    let mut sites: Vec<_> = by_site.into_iter().collect();
    sites.sort_by_key(|(_, (bytes, _))| std::cmp::Reverse(*bytes));
    let mut out = String::new();
    for (stack, (bytes, blocks)) in sites.into_iter().take(25) {
        let trace = first.get(&stack).map(String::as_str).unwrap_or("");
        let frames: Vec<&str> = trace
            .lines()
            .filter(|l| !l.trim_start().starts_with("at "))
            .filter(|l| {
                ![
                    "live_heap",
                    "sites::",
                    "alloc::alloc",
                    "backtrace",
                    "__rust",
                    "std::",
                ]
                .iter()
                .any(|skip| l.contains(skip))
            })
            .take(14)
            .collect();
        let _ = writeln!(
            out,
            "== {:.0} bytes per item ({blocks} blocks of {} bytes)\n{}",
            bytes as f64 / items as f64,
            bytes / blocks.max(1),
            frames.join("\n")
        );
    }
    out
}
