//! Mutation fuzzing of the snapshot readers (Tipsy, `.bonsai`, CSV) on
//! stable Rust: every file of `tests/corpus/` is mutated (bit flips,
//! interesting bytes and header words, truncation, growth, spliced text)
//! for a bounded time, and every mutant must be decoded or refused with an
//! error: no panic, and what decodes re-encodes to the same particles.
//! `WEBGRAV_FUZZ_SECONDS` sets the time (default 20; CI runs 60). A long
//! run for developers: `WEBGRAV_FUZZ_SECONDS=1800 cargo test --release
//! --test fuzz_snapshots -- --nocapture`. A failing mutant is written to
//! `target/fuzz-failures/` to be added to the corpus once fixed.
#![cfg(not(target_arch = "wasm32"))]

mod common;

use common::fuzz::{fuzz_seconds, mutate, pick};
use std::path::Path;
use webgrav::snapshot::Format;
use webgrav::state::rng::Rng;

fn corpus() -> Vec<(String, Format, Vec<u8>)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    files
        .into_iter()
        .map(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            let format = Format::from_path(&name)
                .ok()
                .or_else(|| Format::detect(&std::fs::read(&p).unwrap()))
                .unwrap_or_else(|| panic!("{name}: unknown format"));
            (name, format, std::fs::read(&p).unwrap())
        })
        .collect()
}

#[test]
fn readers_survive_mutated_files() {
    let seconds = fuzz_seconds();
    let corpus = corpus();
    assert!(corpus.len() >= 10, "corpus missing");
    // The corpus itself: good files read, `bad-*` files are refused.
    for (name, format, bytes) in &corpus {
        let r = format.decode(bytes, name);
        assert_eq!(r.is_err(), name.starts_with("bad-"), "{name}: {r:?}");
    }
    let mut rng = Rng::new(2026);
    let start = std::time::Instant::now();
    let (mut tried, mut decoded) = (0u64, 0u64);
    while start.elapsed().as_secs_f64() < seconds {
        let (name, format, seed) = &corpus[pick(&mut rng, corpus.len())];
        let mutant = mutate(&mut rng, seed);
        tried += 1;
        let result = std::panic::catch_unwind(|| {
            let r = format.decode(&mutant, name);
            if let Ok(s) = &r {
                // What decodes is a valid state, and re-encodes to the same
                // particles (Tipsy may regroup them by kind: compare as sets).
                s.particles.validate().unwrap();
                let again = format.decode(&format.encode(s).unwrap(), name).unwrap();
                let set = |p: &webgrav::state::Particles| {
                    let mut v: Vec<[u32; 7]> = (0..p.len())
                        .map(|k| {
                            let (x, u) = (p.pos_mass[k], p.vel[k].vel);
                            [x.pos[0], x.pos[1], x.pos[2], x.mass, u[0], u[1], u[2]]
                                .map(f32::to_bits)
                        })
                        .collect();
                    v.sort_unstable();
                    v
                };
                assert_eq!(set(&again.particles), set(&s.particles));
            }
            r.is_ok()
        });
        match result {
            Ok(ok) => decoded += ok as u64,
            Err(_) => {
                let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/fuzz-failures");
                std::fs::create_dir_all(&dir).unwrap();
                let path = dir.join(format!("{tried}-{name}"));
                std::fs::write(&path, &mutant).unwrap();
                panic!(
                    "reader panicked on a mutant of {name}: saved as {}",
                    path.display()
                );
            }
        }
    }
    eprintln!("fuzz: {tried} mutants in {seconds} s, {decoded} decoded, the rest refused");
    assert!(tried > 1000, "only {tried} mutants tried");
}
