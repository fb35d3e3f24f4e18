//! Blind byte mutations in the style of coverage fuzzers' havoc stage: flips, interesting
//! values, length fields set to edges, cut, duplicated and spliced runs. Deterministic
//! for a given seed, so a failure can be replayed from its seed and input number.

use fastrand::Rng;

/// Values that sit on the edges decoders check: zero, one, signed and unsigned limits.
const EDGES_U8: &[u8] = &[0, 1, 0x7f, 0x80, 0xff, b'{', b'"', b'%', b'&', b'='];
const EDGES_U32: &[u32] = &[
    0,
    1,
    2,
    0xff,
    0x100,
    0xffff,
    0x1_0000,
    0x7fff_ffff,
    u32::MAX,
];

/// Largest input the mutations grow to (bigger inputs only cost time, not coverage).
const MAX_LEN: usize = 64 * 1024;

/// Applies one to four mutations to `input`, drawing splice material from `other`.
pub fn mutate(rng: &mut Rng, input: &mut Vec<u8>, other: &[u8]) {
    for _ in 0..rng.usize(1..=4) {
        one(rng, input, other);
    }
    input.truncate(MAX_LEN);
}

fn one(rng: &mut Rng, input: &mut Vec<u8>, other: &[u8]) {
    let len = input.len();
    let at = |rng: &mut Rng| if len == 0 { 0 } else { rng.usize(0..len) };
    match rng.u8(0..9) {
        0 if len > 0 => {
            let i = at(rng);
            input[i] ^= 1 << rng.u8(0..8);
        }
        1 if len > 0 => {
            let i = at(rng);
            input[i] = EDGES_U8[rng.usize(0..EDGES_U8.len())];
        }
        2 if len >= 4 => {
            let i = rng.usize(0..=len - 4);
            let v = EDGES_U32[rng.usize(0..EDGES_U32.len())];
            input[i..i + 4].copy_from_slice(&v.to_le_bytes());
        }
        3 if len >= 2 => {
            let i = rng.usize(0..=len - 2);
            let v = EDGES_U32[rng.usize(0..EDGES_U32.len())] as u16;
            input[i..i + 2].copy_from_slice(&v.to_le_bytes());
        }
        4 if len > 0 => {
            let from = at(rng);
            let to = rng.usize(from..=len.min(from + 64));
            input.drain(from..to);
        }
        5 if len > 0 => {
            let from = at(rng);
            let to = rng.usize(from..=len.min(from + 64));
            let run = input[from..to].to_vec();
            let i = at(rng);
            input.splice(i..i, run);
        }
        6 if !other.is_empty() => {
            let from = rng.usize(0..other.len());
            let to = rng.usize(from..=other.len().min(from + 256));
            let i = at(rng);
            input.splice(i..i, other[from..to].iter().copied());
        }
        7 => input.truncate(at(rng)),
        _ => {
            let i = at(rng);
            let n = rng.usize(1..=8);
            let junk: Vec<u8> = (0..n).map(|_| rng.u8(..)).collect();
            input.splice(i..i, junk);
        }
    }
}
