//! Mutation fuzzing of what a long run reads back: checkpoints
//! (`Checkpoint::decode`, and `Run::resume` with a read-out for a sample
//! of the mutants that decode; bytes changed, or one field set to an odd
//! value through `Checkpoint` itself) and series indexes (`index.json`: `index_times`,
//! `read_index`, `Series::open` with the series' files). Seeds are made
//! here: a checkpoint of every solver kind, and the index of a real
//! `webgrav run` (numbered and Bonsai-named). Every mutant must be read or
//! refused with an error: no panic, and no allocation beyond a small
//! multiple of its size (a counting allocator measures each read). Mutated
//! checkpoints are mostly resealed with their checksum, so the reader's
//! checks behind it are reached. `WEBGRAV_FUZZ_SECONDS` sets the time, as
//! for `tests/fuzz_snapshots.rs`.
#![cfg(not(target_arch = "wasm32"))]

mod common;

use common::fuzz::{fuzz_seconds, mutate, pick};
use pollster::block_on;
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use webgrav::app::series::{index_times, read_index, Series};
use webgrav::gpu::GpuContext;
use webgrav::run::block::Timesteps;
use webgrav::run::checkpoint::{Checkpoint, EngineState, HermiteState};
use webgrav::run::{Run, RunParams, SolverKind};
use webgrav::state::rng::Rng;
use webgrav::state::Model;

/// The system allocator, counting each thread's live bytes and their peak,
/// so a test can bound what one call allocates.
struct Counting;

thread_local! {
    static LIVE: Cell<usize> = const { Cell::new(0) };
    static PEAK: Cell<usize> = const { Cell::new(0) };
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let _ = LIVE.try_with(|l| {
            let live = l.get() + layout.size();
            l.set(live);
            let _ = PEAK.try_with(|p| p.set(p.get().max(live)));
        });
        System.alloc(layout)
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        let _ = LIVE.try_with(|l| l.set(l.get().saturating_sub(layout.size())));
        System.dealloc(ptr, layout)
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// What `f` allocates at its peak beyond what was live before, in bytes.
fn peak_allocation<T>(f: impl FnOnce() -> T) -> (T, usize) {
    let base = LIVE.with(Cell::get);
    PEAK.with(|p| p.set(base));
    let r = f();
    (r, PEAK.with(Cell::get) - base)
}

/// A reader may hold its input a few times over (decoded records are about
/// as large as their bytes) and some fixed state; never more.
fn allowed(input: usize) -> usize {
    16 * input + (1 << 20)
}

/// XXH3-64 over `body`, the checksum a checkpoint of format 7 or later ends with
/// (the seeds are checked to end with it before mutants are resealed with
/// it).
fn xxh3(body: &[u8]) -> u64 {
    xxhash_rust::xxh3::xxh3_64(body)
}

fn sealed(bytes: &[u8]) -> bool {
    bytes.len() >= 8 && {
        let (body, sum) = bytes.split_at(bytes.len() - 8);
        sum == xxh3(body).to_le_bytes()
    }
}

fn reseal(mut bytes: Vec<u8>) -> Vec<u8> {
    if bytes.len() >= 8 {
        let at = bytes.len() - 8;
        let sum = xxh3(&bytes[..at]);
        bytes[at..].copy_from_slice(&sum.to_le_bytes());
    }
    bytes
}

const ODD_F64: [f64; 8] = [
    0.0,
    -0.0,
    f64::NAN,
    f64::INFINITY,
    -1.0,
    1e300,
    1e-300,
    5e-324,
];
const ODD_U64: [u64; 4] = [0, 1, u64::MAX, 1 << 40];

/// One field of a decoded checkpoint set to an odd value (what a damaged
/// file with an intact checksum, or another writer, could hold), through
/// the public type, so the mutations follow the format as it changes.
fn mutate_field(rng: &mut Rng, c: &mut Checkpoint) {
    let x = ODD_F64[pick(rng, ODD_F64.len())];
    let u = ODD_U64[pick(rng, ODD_U64.len())];
    let k = pick(rng, c.ids.len());
    let p = &mut c.params;
    // The engine's state (what resuming uses) half of the time.
    match pick(rng, 26) {
        0 => c.time = x,
        1 => c.steps = u,
        2 => c.base_time = x,
        3 => c.base_steps = u,
        4 => c.de_max = x,
        5 => c.ids[k] = c.ids[(k + 1) % c.ids.len()],
        6 => p.eps = x as f32,
        7 => p.dt = x,
        8 => p.dt_max = x,
        9 => p.eta = x,
        10 => p.theta = x as f32,
        11 => p.rebuild = u as u32,
        // 0 and beyond MAX_DEPTH (21) are refused.
        12 => c.tree_deepest = pick(rng, 40) as u32,
        // What the CLI reads back as JSON; the reader caps its length.
        13 => {
            c.request = [
                String::new(),
                "{".into(),
                "{\"t_end\":-1e308}".into(),
                "\u{0}".into(),
                "x".repeat(webgrav::run::checkpoint::MAX_REQUEST + 1),
            ][pick(rng, 5)]
            .clone()
        }
        _ => match &mut c.engine {
            EngineState::Hermite(HermiteState {
                offset,
                target,
                time,
                bodies,
                ..
            }) => {
                let b = &mut bodies[k];
                *[
                    offset,
                    target,
                    time,
                    &mut b.mass,
                    &mut b.t0,
                    &mut b.dt,
                    &mut b.pos[0],
                    &mut b.vel[1],
                    &mut b.acc[2],
                    &mut b.pot,
                ]
                .into_iter()
                .nth(pick(rng, 10))
                .expect("ten fields") = x;
            }
            EngineState::Leapfrog(s) => match pick(rng, 4) {
                0 => s.pos_mass[k].mass = x as f32,
                1 => s.pos_mass[k].pos[0] = x as f32,
                2 => s.vel[k].vel[1] = x as f32,
                _ => s.acc_pot[k].acc[2] = x as f32,
            },
        },
    }
}

/// A checkpoint of every solver kind (and of the tree's block steps)
/// after a few steps of a small run.
fn checkpoints(ctx: &GpuContext) -> Vec<(String, Vec<u8>)> {
    let mut p = Model::Plummer.generate(48, 3).unwrap();
    p.id = (0..48).map(|k| 900 - 5 * k).collect();
    let kinds = SolverKind::ALL
        .iter()
        .map(|&solver| (solver, Timesteps::Shared, solver.name()))
        .chain([(SolverKind::Tree, Timesteps::Block, "tree-block")]);
    kinds
        .map(|(solver, timesteps, name)| {
            let params = RunParams {
                solver,
                timesteps,
                levels: 2,
                eps: 0.05,
                dt: 1.0 / 64.0,
                dt_max: 1.0 / 64.0,
                ..RunParams::default()
            };
            let bytes = block_on(async {
                let mut run = Run::new(ctx, &p, 0.0, params.validate().unwrap())
                    .await
                    .unwrap();
                run.run_to(ctx, 1.0 / 16.0, |_, _| true).await.unwrap();
                run.checkpoint(ctx).await.unwrap()
            });
            (format!("{name}.ckpt"), bytes)
        })
        .collect()
}

// Mutated checkpoints of every integrator are decoded or refused, never a
// panic or an allocation beyond their size's measure; a sample of those
// that decode is resumed on the GPU, which also must succeed or refuse.
#[test]
fn checkpoint_reading_survives_mutated_files() {
    let ctx = common::gpu();
    let seeds = checkpoints(&ctx);
    for (name, bytes) in &seeds {
        let c = Checkpoint::decode(bytes, name).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(c.ids.len(), 48, "{name}");
    }
    // Reseal mutants only while the format ends with this checksum.
    let resealable = seeds.iter().all(|(_, b)| sealed(b));
    if !resealable {
        eprintln!("fuzz: checkpoints do not end with XXH3-64; mutants are not resealed");
    }
    let seconds = fuzz_seconds();
    let mut rng = Rng::new(34);
    let start = std::time::Instant::now();
    let (mut tried, mut decoded, mut resumed) = (0u64, 0u64, 0u64);
    let mut resuming = std::time::Duration::ZERO;
    while start.elapsed().as_secs_f64() < seconds {
        let (name, seed) = &seeds[pick(&mut rng, seeds.len())];
        tried += 1;
        // A quarter of the mutants change one field and are encoded again;
        // the rest change bytes (mostly resealed with the checksum).
        let fields = rng.uniform() < 0.25;
        let mutant = if fields {
            let mut c = Checkpoint::decode(seed, name).unwrap();
            mutate_field(&mut rng, &mut c);
            c.encode()
        } else {
            let m = mutate(&mut rng, seed);
            if resealable && rng.uniform() < 0.9 {
                reseal(m)
            } else {
                m
            }
        };
        // Resuming builds GPU state (some 0.2 s on a CPU adapter): a
        // sample (one field mutant in 4, one byte mutant in 50) within
        // half of the time, so the reader gets the rest.
        let sampled = tried % if fields { 4 } else { 50 } == 0;
        let resume = sampled && resuming.as_secs_f64() < seconds / 2.0;
        let clock = std::time::Instant::now();
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let (r, bytes) = peak_allocation(|| Checkpoint::decode(&mutant, name));
            assert!(
                bytes <= allowed(mutant.len()),
                "decoding {} bytes allocated {bytes}",
                mutant.len()
            );
            let ok = r.is_ok();
            // A resumed run is read out at once (as `webgrav run --resume`
            // does): the state must be usable, not only accepted.
            let resumed = ok
                && resume
                && block_on(async {
                    let mut run = Run::resume(&ctx, &mutant, name).await.ok()?;
                    run.readout(&ctx).await.ok()
                })
                .is_some();
            (ok, resumed)
        }));
        if resume {
            resuming += clock.elapsed();
        }
        match outcome {
            Ok((ok, r)) => {
                decoded += ok as u64;
                resumed += r as u64;
            }
            Err(_) => fail(tried, name, &mutant, "checkpoint reading panicked"),
        }
    }
    eprintln!(
        "fuzz: {tried} checkpoint mutants in {seconds} s, {decoded} decoded, {resumed} resumed"
    );
    assert!(tried > 100, "only {tried} mutants tried");
    if resealable {
        assert!(decoded > 0, "no resealed mutant got past the checksum");
    }
}

// A Hermite body whose time step is 0 (or NaN, or above dt_max) has no
// block-step level: such a checkpoint, checksum intact, is refused when
// resumed, naming the body (its read-out panicked).
#[test]
fn a_hermite_body_without_a_time_step_is_refused() {
    let ctx = common::gpu();
    let (name, seed) = checkpoints(&ctx)
        .into_iter()
        .find(|(name, _)| name.starts_with("hermite"))
        .unwrap();
    for dt in [0.0, f64::NAN, 1.0] {
        let mut c = Checkpoint::decode(&seed, &name).unwrap();
        let EngineState::Hermite(HermiteState { bodies, .. }) = &mut c.engine else {
            panic!("{name} is not a Hermite checkpoint");
        };
        bodies[7].dt = dt;
        let e = block_on(Run::resume(&ctx, &c.encode(), &name))
            .err()
            .unwrap_or_else(|| panic!("dt = {dt} resumed"))
            .to_string();
        assert!(e.contains("body 7"), "{e}");
    }
}

/// Saves a failing mutant under `target/fuzz-failures/` and fails.
fn fail(tried: u64, name: &str, mutant: &[u8], what: &str) -> ! {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("target/fuzz-failures");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("{tried}-{name}"));
    std::fs::write(&path, mutant).unwrap();
    panic!("{what} on a mutant of {name}: saved as {}", path.display());
}

/// A series written by a real run: its directory and files (name, bytes),
/// `index.json` among them.
fn run_series(dir: &std::path::Path, bonsai_names: bool) -> Vec<(String, Vec<u8>)> {
    let _ = std::fs::remove_dir_all(dir);
    let d = dir.to_str().unwrap();
    let mut args: Vec<&str> =
        "run -n 32 --solver direct --dt 0.0625 --t-end 0.25 --snap-every 0.125 --snap-format csv"
            .split(' ')
            .chain(["--snap-dir", d])
            .collect();
    if bonsai_names {
        args.push("--bonsai-names");
    }
    let (ok, _, stderr) = common::webgrav(&args);
    assert!(ok, "{stderr}");
    let mut files: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .map(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            (name, std::fs::read(&p).unwrap())
        })
        .collect();
    files.sort();
    files
}

// Mutated series indexes (from real runs, numbered and Bonsai-named) are
// read or refused with an error by every reader of them: the text parser
// the page and the CLI share, the CLI's reader of a directory's index, and
// the series the page's player opens with the files: no panic, and no
// allocation beyond the index's size's measure.
#[test]
fn index_reading_survives_mutated_files() {
    let root = common::fresh_dir("fuzz-index");
    let series = [
        run_series(&root.join("numbered"), false),
        run_series(&root.join("bonsai"), true),
    ];
    for files in &series {
        let (_, index) = files.iter().find(|(n, _)| n == "index.json").unwrap();
        let times = index_times(std::str::from_utf8(index).unwrap(), "index.json").unwrap();
        assert_eq!(times.len(), 3, "{files:?}");
        assert!(Series::open(files.clone()).is_ok());
    }
    let scratch = root.join("mutant");
    std::fs::create_dir_all(&scratch).unwrap();
    let seconds = fuzz_seconds();
    let mut rng = Rng::new(35);
    let start = std::time::Instant::now();
    let (mut tried, mut read) = (0u64, 0u64);
    while start.elapsed().as_secs_f64() < seconds {
        let files = &series[pick(&mut rng, series.len())];
        let (_, index) = files.iter().find(|(n, _)| n == "index.json").unwrap();
        let mutant = mutate(&mut rng, index);
        tried += 1;
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let text = String::from_utf8_lossy(&mutant);
            let (r, bytes) = peak_allocation(|| index_times(&text, "index.json"));
            assert!(
                bytes <= allowed(mutant.len()),
                "parsing {} bytes allocated {bytes}",
                mutant.len()
            );
            // The directory reader and the player, less often (they touch
            // the disk or decode the series' snapshots).
            if tried % 10 == 0 {
                std::fs::write(scratch.join("index.json"), &mutant).unwrap();
                let on_disk = read_index(scratch.to_str().unwrap());
                assert_eq!(
                    on_disk.is_ok(),
                    std::str::from_utf8(&mutant).is_ok() && r.is_ok()
                );
                let with_files = files
                    .iter()
                    .map(|(n, b)| {
                        (
                            n.clone(),
                            if n == "index.json" {
                                mutant.clone()
                            } else {
                                b.clone()
                            },
                        )
                    })
                    .collect();
                let _ = Series::open(with_files);
            }
            r.is_ok()
        }));
        match outcome {
            Ok(ok) => read += ok as u64,
            Err(_) => fail(tried, "index.json", &mutant, "index reading panicked"),
        }
    }
    eprintln!("fuzz: {tried} index mutants in {seconds} s, {read} read, the rest refused");
    assert!(tried > 1000, "only {tried} mutants tried");
    std::fs::remove_dir_all(&root).unwrap();
}

// Issue 48 item 8: a step count near u64's end (checksum resealed) is
// refused, not wrapped by the steps that follow.
#[test]
fn a_step_count_no_run_takes_is_refused() {
    let ctx = common::gpu();
    for (name, seed) in checkpoints(&ctx) {
        let mut c = Checkpoint::decode(&seed, &name).unwrap();
        c.steps = u64::MAX - 10;
        let e = block_on(Run::resume(&ctx, &c.encode(), &name))
            .err()
            .unwrap_or_else(|| panic!("{name}: resumed"))
            .to_string();
        assert!(e.contains("more than a run takes"), "{name}: {e}");
    }
}
