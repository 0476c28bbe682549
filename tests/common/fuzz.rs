//! Mutation fuzzing on stable Rust, shared by the fuzzers of snapshots,
//! checkpoints and series indexes: seeds are mutated (bit flips,
//! interesting bytes and words, truncation, growth, repeated slices,
//! spliced text) for `WEBGRAV_FUZZ_SECONDS` (default 20; CI runs 30).
#![allow(dead_code)]

use webgrav::state::rng::Rng;

/// How long each fuzzer runs: `WEBGRAV_FUZZ_SECONDS`, default 20.
pub fn fuzz_seconds() -> f64 {
    std::env::var("WEBGRAV_FUZZ_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(20.0)
}

const INTERESTING_BYTES: [u8; 8] = [0, 1, 0x7f, 0x80, 0xff, b',', b'"', b'\n'];
const INTERESTING_WORDS: [i32; 8] = [0, 1, -1, 3, 8, i32::MAX, i32::MIN, 0x7f80_0000];
/// u64 counts and the bits of f64 values: 0, 1, huge, -0.0, NaN, ∞, the
/// smallest subnormal, 1e300.
const INTERESTING_WIDE: [u64; 8] = [
    0,
    1,
    u64::MAX,
    1 << 40,
    0x8000_0000_0000_0000,
    0x7ff8_0000_0000_0000,
    0x7ff0_0000_0000_0000,
    0x7e37_e43c_8800_759c,
];

pub fn pick(rng: &mut Rng, n: usize) -> usize {
    ((rng.uniform() * n as f64) as usize).min(n.saturating_sub(1))
}

/// One to four random mutations of `seed`.
pub fn mutate(rng: &mut Rng, seed: &[u8]) -> Vec<u8> {
    let mut b = seed.to_vec();
    for _ in 0..1 + pick(rng, 4) {
        if b.is_empty() {
            b.push(b'0');
        }
        let at = pick(rng, b.len());
        match pick(rng, 8) {
            0 => b[at] ^= 1 << pick(rng, 8),
            1 => b[at] = INTERESTING_BYTES[pick(rng, INTERESTING_BYTES.len())],
            2 => {
                // A header word (Tipsy counts and version sit in 8..32).
                let w = INTERESTING_WORDS[pick(rng, INTERESTING_WORDS.len())];
                let at = 4 * pick(rng, 8.min(b.len() / 4).max(1));
                let bytes = if rng.uniform() < 0.5 {
                    w.to_be_bytes()
                } else {
                    w.to_le_bytes()
                };
                for (k, v) in bytes.iter().enumerate() {
                    if let Some(x) = b.get_mut(at + k) {
                        *x = *v;
                    }
                }
            }
            3 => b.truncate(at),
            7 => {
                // An 8-byte word anywhere (checkpoints' counts, times and
                // steps are u64 and f64).
                let w = INTERESTING_WIDE[pick(rng, INTERESTING_WIDE.len())];
                for (k, v) in w.to_le_bytes().iter().enumerate() {
                    if let Some(x) = b.get_mut(at + k) {
                        *x = *v;
                    }
                }
            }
            4 => {
                let extra: Vec<u8> = (0..1 + pick(rng, 64))
                    .map(|_| pick(rng, 256) as u8)
                    .collect();
                b.splice(at..at, extra);
            }
            5 => {
                // Duplicate a slice (repeated records or lines).
                let len = pick(rng, 48.min(b.len() - at) + 1);
                let piece = b[at..at + len].to_vec();
                b.splice(at..at, piece);
            }
            _ => {
                let text = [
                    "e99", "-", "nan", "inf", ",", "\"", "\r\n", "#", "1e-45", "  ",
                ];
                b.splice(at..at, text[pick(rng, text.len())].bytes());
            }
        }
    }
    b
}
