//! Mutation fuzzing of the snapshot readers (Tipsy, `.bonsai`, CSV) on
//! stable Rust: every file of `tests/corpus/` is mutated (bit flips,
//! interesting bytes and header words, truncation, growth, spliced text)
//! for a bounded time, and every mutant must be decoded or refused with an
//! error: no panic, and what decodes re-encodes to the same particles.
//! `WEBGRAV_FUZZ_SECONDS` sets the time (default 20; CI runs 30). A long
//! run for developers: `WEBGRAV_FUZZ_SECONDS=1800 cargo test --release
//! --test fuzz_snapshots -- --nocapture`. A failing mutant is written to
//! `target/fuzz-failures/` to be added to the corpus once fixed.
//!
//! HDF5 files are mutated only where their datasets' values lie, and
//! truncated: the HDF5 C library trusts its own metadata (a flipped bit in
//! a B-tree or an object header can crash the process), so the fuzzer
//! exercises webgrav's checks of what the library hands over, not the
//! library.
#![cfg(not(target_arch = "wasm32"))]

mod common;

use common::fuzz::{fuzz_seconds, mutate, pick};
use std::path::Path;
use webgrav::snapshot::Format;
use webgrav::state::rng::Rng;

/// The byte ranges of an HDF5 file's dataset values (its contiguous
/// datasets' storage), where its mutants are made.
#[cfg(feature = "hdf5")]
fn hdf5_values(path: &Path) -> Vec<std::ops::Range<usize>> {
    let f = hdf5_metno::File::with_options()
        .with_fapl(|p| p.file_locking(false))
        .open(path)
        .unwrap();
    let mut ranges = Vec::new();
    for g in f.groups().unwrap() {
        for d in g.datasets().unwrap() {
            if let Some(at) = d.offset() {
                ranges.push(at as usize..(at + d.storage_size()) as usize);
            }
        }
    }
    ranges
}

#[cfg(not(feature = "hdf5"))]
fn hdf5_values(_: &Path) -> Vec<std::ops::Range<usize>> {
    Vec::new()
}

/// A mutant of an HDF5 seed: some of its values mutated (the file's
/// length and metadata kept), or the file truncated.
fn mutate_hdf5(rng: &mut Rng, seed: &[u8], values: &[std::ops::Range<usize>]) -> Vec<u8> {
    let mut b = seed.to_vec();
    if rng.uniform() < 0.1 {
        b.truncate(pick(rng, b.len()));
        return b;
    }
    let r = values[pick(rng, values.len())].clone();
    let mut part = mutate(rng, &b[r.clone()]);
    part.resize(r.len(), 0);
    b[r].copy_from_slice(&part);
    b
}

fn corpus() -> Vec<(String, Format, Vec<u8>)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    files
        .into_iter()
        .filter(|p| cfg!(feature = "hdf5") || p.extension().is_none_or(|e| e != "hdf5"))
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
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus");
    let values: Vec<_> = corpus
        .iter()
        .map(|(name, format, _)| match format {
            Format::Hdf5(_) => hdf5_values(&dir.join(name)),
            _ => Vec::new(),
        })
        .collect();
    // The corpus itself: good files read, `bad-*` files are refused.
    for (name, format, bytes) in &corpus {
        let r = format.decode(bytes, name);
        assert_eq!(r.is_err(), name.starts_with("bad-"), "{name}: {r:?}");
    }
    let mut rng = Rng::new(2026);
    let start = std::time::Instant::now();
    let (mut tried, mut decoded) = (0u64, 0u64);
    while start.elapsed().as_secs_f64() < seconds {
        let k = pick(&mut rng, corpus.len());
        let (name, format, seed) = &corpus[k];
        let mutant = match format {
            Format::Hdf5(_) => mutate_hdf5(&mut rng, seed, &values[k]),
            _ => mutate(&mut rng, seed),
        };
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
