//! What per-frame authentication costs a push hint: encoding a typical hint alone, then
//! encoding and tagging it (the sender's work with `QUEEN_MESH_SECRET`), and checking the
//! tag and decoding it (the receiver's), in nanoseconds per hint on this machine.
//!
//! Run: `cargo bench --bench mesh_frames` (env: QUEEN_BENCH_HINTS, default 1,000,000).
//! No database and no network: the mesh's own code on one core, best of three rounds.

use std::hint::black_box;
use std::time::Instant;

use queen::config::Secret;
use queen::mesh::frame;
use queen::mesh::message::{MeshMessage, PushHint};
use queen::mesh::sealed::{frame_key, Opener, Sealer};

fn main() {
    let hints: u64 = std::env::var("QUEEN_BENCH_HINTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000_000);
    let hint = MeshMessage::PushLanded(PushHint {
        tenant: String::new(),
        queue: "orders-eu-west".into(),
        partition_id: 123_456,
        partition: "customer-0042".into(),
        last_offset: 9_876_543,
        messages: 100,
    });
    let secret = Secret::new("a-mesh-secret-of-usual-length-0123456789");
    let key = || frame_key(Some(&secret), &[1; 16], &[2; 16], "node-a");
    let size = frame::encode(&hint).len();

    let encode = best(hints, |_| {
        black_box(frame::encode(black_box(&hint)));
    });
    let mut sealer = Sealer::new(key());
    let seal = best(hints, |_| {
        black_box(sealer.seal(&frame::encode(black_box(&hint))));
    });
    // The receiver's side needs frames sealed in sequence: seal them first, then time.
    let mut sealer = Sealer::new(key());
    let sealed: Vec<_> = (0..hints)
        .map(|_| sealer.seal(&frame::encode(&hint)))
        .collect();
    let plain = frame::encode(&hint);
    let decode = best(hints, |_| {
        black_box(frame::decode(black_box(&plain)).expect("decodes"));
    });
    let started = Instant::now();
    let mut opener = Opener::new(key());
    for frame in &sealed {
        let payload = opener.open(black_box(frame)).expect("the tag checks");
        black_box(frame::decode(payload).expect("decodes"));
    }
    let open_decode = started.elapsed().as_nanos() as f64 / hints as f64;

    println!("push hint: {size} bytes encoded, +16 bytes tag with a secret");
    println!("sender   encode only            {encode:>8.1} ns/hint");
    println!(
        "sender   encode + tag           {seal:>8.1} ns/hint  (+{:.1})",
        seal - encode
    );
    println!("receiver decode only            {decode:>8.1} ns/hint");
    println!(
        "receiver check tag + decode     {open_decode:>8.1} ns/hint  (+{:.1})",
        open_decode - decode
    );
}

/// The best of three rounds of `n` calls, in ns per call.
fn best(n: u64, mut work: impl FnMut(u64)) -> f64 {
    (0..3)
        .map(|_| {
            let started = Instant::now();
            for i in 0..n {
                work(i);
            }
            started.elapsed().as_nanos() as f64 / n as f64
        })
        .fold(f64::INFINITY, f64::min)
}
