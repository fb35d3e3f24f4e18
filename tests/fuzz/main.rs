//! Fuzzes every decoder that reads bytes from outside the broker, on the stable toolchain.
//!
//! `cargo test --test fuzz` replays the seed corpus (seeds built in [`seeds`], plus the files
//! under `tests/fuzz/corpus/<target>/`) and a short deterministic run of mutations.
//! `bench/fuzz-decoders.sh` runs the same binary for a million inputs a target or more:
//! `cargo test --release --test fuzz -- --inputs 1000000 [--seed N] [--target NAME]`.
//!
//! Each input must not panic, must hold at most [`targets::Target::bound`] bytes of heap at
//! once, and a refused request body must be a 4xx. A failing input is written to
//! `tests/fuzz/corpus/<target>/` (so it is replayed from then on) and the run fails.
//! Feedback is the decoder's outcome: an input whose outcome was not seen before joins the
//! in-memory corpus, so mutations reach past the first checks of each format.

mod alloc;
mod mutate;
mod seeds;
mod targets;

use std::collections::HashSet;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;
use std::time::Instant;

use targets::{Target, TARGETS};

#[global_allocator]
static ALLOC: alloc::PeakAlloc = alloc::PeakAlloc;

/// Mutated inputs a target gets under `cargo test`: enough to catch a plain regression in
/// a few seconds of a debug build.
const TEST_INPUTS: u64 = 3_000;

/// Most inputs the in-memory corpus grows to: error texts vary with the input (serde names
/// the token it met), so without a cap a long run would keep everything it tried.
const MAX_CORPUS: usize = 4_096;

struct Args {
    inputs: u64,
    seed: u64,
    only: Option<String>,
}

fn args() -> Args {
    let mut out = Args {
        inputs: TEST_INPUTS,
        seed: 12,
        only: None,
    };
    // Unknown arguments (the test harness's filters) are ignored.
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        match a.as_str() {
            "--inputs" => out.inputs = it.next().and_then(|v| v.parse().ok()).unwrap_or(out.inputs),
            "--seed" => out.seed = it.next().and_then(|v| v.parse().ok()).unwrap_or(out.seed),
            "--target" => out.only = it.next(),
            _ => {}
        }
    }
    out
}

fn main() {
    let args = args();
    // A panic is a finding, reported below: keep the default hook's noise out of the table.
    std::panic::set_hook(Box::new(|_| {}));
    println!("target            inputs  corpus  outcomes  max peak/bound  secs");
    let mut failed = false;
    for target in TARGETS {
        if args.only.as_deref().is_some_and(|o| o != target.name) {
            continue;
        }
        failed |= !fuzz(target, &args);
    }
    if failed {
        std::process::exit(1);
    }
}

/// Replays the corpus of `target`, then mutates it `args.inputs` times; true when every
/// input held.
fn fuzz(target: &Target, args: &Args) -> bool {
    let started = Instant::now();
    let mut corpus = seeds::seeds(target.name);
    corpus.extend(stored(target.name));
    let mut outcomes = HashSet::new();
    let mut worst = 0.0f64;
    let mut failures = 0;
    let replay: Vec<Vec<u8>> = corpus.clone();
    for input in &replay {
        match check(target, input) {
            Ok((label, ratio)) => {
                outcomes.insert(label);
                worst = worst.max(ratio);
            }
            Err(why) => failures += report(target, input, &why),
        }
    }
    let mut rng = fastrand::Rng::with_seed(args.seed);
    for _ in 0..args.inputs {
        let mut input = corpus[rng.usize(0..corpus.len())].clone();
        let other = &corpus[rng.usize(0..corpus.len())];
        mutate::mutate(&mut rng, &mut input, other);
        match check(target, &input) {
            Ok((label, ratio)) => {
                worst = worst.max(ratio);
                if outcomes.len() < MAX_CORPUS && outcomes.insert(label) {
                    corpus.push(input);
                }
            }
            Err(why) => {
                failures += report(target, &input, &why);
                if failures >= 5 {
                    break;
                }
            }
        }
    }
    println!(
        "{:<16} {:>8} {:>7} {:>9} {:>15.3} {:>5.1}",
        target.name,
        args.inputs + replay.len() as u64,
        corpus.len(),
        outcomes.len(),
        worst,
        started.elapsed().as_secs_f64()
    );
    failures == 0
}

/// Runs one input: its outcome label and its peak heap as a fraction of its bound, or why
/// it failed.
fn check(target: &Target, input: &[u8]) -> Result<(String, f64), String> {
    let (result, peak) = alloc::measure(|| catch_unwind(AssertUnwindSafe(|| (target.run)(input))));
    let label = result.map_err(|panic| {
        let text = panic
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| panic.downcast_ref::<&str>().map(|s| (*s).to_owned()))
            .unwrap_or_default();
        format!("panicked: {text}")
    })?;
    let bound = target.bound(input.len());
    if peak > bound {
        return Err(format!(
            "held {peak} heap bytes for a {}-byte input (bound {bound})",
            input.len()
        ));
    }
    Ok((label, peak as f64 / bound as f64))
}

fn corpus_dir(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fuzz/corpus")
        .join(name)
}

/// The stored inputs of a target.
fn stored(name: &str) -> Vec<Vec<u8>> {
    let Ok(entries) = std::fs::read_dir(corpus_dir(name)) else {
        return Vec::new();
    };
    let mut paths: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
    paths.sort();
    paths.iter().filter_map(|p| std::fs::read(p).ok()).collect()
}

/// Prints a failure and keeps its input; returns 1.
fn report(target: &Target, input: &[u8], why: &str) -> usize {
    let dir = corpus_dir(target.name);
    let name = format!("failure-{:016x}", fxhash(input));
    let kept = std::fs::create_dir_all(&dir)
        .and_then(|()| std::fs::write(dir.join(&name), input))
        .map_or_else(|e| format!("not kept: {e}"), |()| format!("kept as {name}"));
    eprintln!("{}: {why} ({} bytes, {kept})", target.name, input.len());
    1
}

/// A stable name for an input (FNV-1a).
fn fxhash(input: &[u8]) -> u64 {
    input.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
    })
}
