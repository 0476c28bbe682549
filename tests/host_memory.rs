//! The host memory of the steps of a large run, per particle: the growth of
//! the process's peak resident memory (Linux `VmHWM`, reset through
//! `/proc/self/clear_refs`) between two N, so that fixed costs cancel.
//! Generating a model holds its f64 arrays, not them and the f32 particles
//! at once; snapshot writes stream (no copy of the file in memory) and
//! reads hold the state alone; a read-out of a run holds one state beside
//! the last good one it reuses, and a checkpoint a piece of the state at a
//! time (it streams from the GPU to its file). Together
//! they keep a run within `app::host::HOST_BYTES_PER_PARTICLE`
//! (guide/src/limits.md). One test: the steps must not overlap.
#![cfg(target_os = "linux")]

mod common;

use pollster::block_on;
use webgrav::run::{Run, RunParams, SolverKind};
use webgrav::snapshot;
use webgrav::state::Model;

fn status_kb(key: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix(key))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

/// How far the peak resident memory rose above the resident memory before
/// `f` ran, in bytes, and what `f` returned.
fn peak_growth<T>(f: impl FnOnce() -> T) -> (T, f64) {
    std::fs::write("/proc/self/clear_refs", "5").expect("reset the peak (Linux 4.0+)");
    let before = status_kb("VmRSS:");
    let out = f();
    let peak = status_kb("VmHWM:");
    (out, (peak.saturating_sub(before) * 1024) as f64)
}

/// Bytes per particle of the growth of `step(n)` between two N, far
/// enough apart that a buffer of some MiB the allocator may or may not
/// find resident counts for a few bytes per particle at most.
fn per_particle(step: impl Fn(usize) -> f64) -> f64 {
    let (n1, n2) = (1 << 18, 1 << 21);
    let (g1, g2) = (step(n1), step(n2));
    let per = (g2 - g1) / (n2 - n1) as f64;
    eprintln!("{per:.1} bytes per particle");
    per
}

#[test]
fn a_run_holds_one_state_at_a_time() {
    // glibc returns freed blocks above its mmap threshold to the system at
    // once, but raises the threshold as such blocks are freed (up to 32
    // MiB), after which freed memory stays resident and is reused unseen:
    // the arrays of this test's N are near it. A fixed threshold makes
    // every array count as the arrays of 10^8 particles do; the test runs
    // itself again with one.
    if std::env::var_os("MALLOC_MMAP_THRESHOLD_").is_none() {
        let status = std::process::Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "a_run_holds_one_state_at_a_time", "--nocapture"])
            .env("MALLOC_MMAP_THRESHOLD_", "1048576")
            .status()
            .unwrap();
        assert!(status.success());
        return;
    }
    // A model is converted to f32 a piece at a time: the peak is its f64
    // arrays (56 bytes per particle and a 4-byte tag, and what of them the
    // allocator does not return at once), not them and the 40-byte
    // particles at once.
    let model = per_particle(|n| peak_growth(|| Model::Hernquist.generate_tagged(n, 7).unwrap()).1);
    assert!(
        model < 80.0,
        "generating a model: {model:.1} bytes per particle"
    );

    // Snapshot writes stream: no copy of the file in memory.
    let dir = common::fresh_dir("host-memory");
    for ext in ["bonsai", "tipsy", "gadget", "csv"] {
        let path = dir.join(format!("s.{ext}")).to_str().unwrap().to_string();
        let write = per_particle(|n| {
            let snap = snapshot::Snapshot {
                particles: Model::Plummer.generate(n, 3).unwrap(),
                ..Default::default()
            };
            peak_growth(|| snapshot::write_file(&path, &snap).unwrap()).1
        });
        assert!(
            write < 10.0,
            "writing .{ext}: {write:.1} bytes per particle"
        );
    }
    // A Tipsy read holds the particles (40 bytes) and potentials (4), not
    // the file's bytes beside them.
    let path = dir.join("r.bonsai").to_str().unwrap().to_string();
    let read = per_particle(|n| {
        let snap = snapshot::Snapshot {
            particles: Model::Plummer.generate(n, 3).unwrap(),
            ..Default::default()
        };
        snapshot::write_file(&path, &snap).unwrap();
        drop(snap);
        peak_growth(|| snapshot::read_file(&path).unwrap()).1
    });
    assert!(read < 52.0, "reading .bonsai: {read:.1} bytes per particle");

    // A read-out (its previous one dropped) reuses the last good state's
    // arrays and adds the forces, potentials and upload index (24 bytes);
    // a checkpoint goes from the GPU to its file a piece at a time, so the
    // host holds neither the state (52 bytes) nor a copy of the ids (8).
    let ctx = common::gpu();
    let config = RunParams {
        solver: SolverKind::Tree,
        theta: 1.0,
        alpha: 0.0,
        ..RunParams::default()
    }
    .validate()
    .unwrap();
    let (n1, n2) = (1 << 19, 1 << 20);
    let (readout, checkpoint): (Vec<f64>, Vec<f64>) = [n1, n2]
        .into_iter()
        .map(|n| {
            let particles = Model::Plummer.generate(n, 5).unwrap();
            let mut run = block_on(Run::from_particles(&ctx, particles, 0.0, config)).unwrap();
            drop(block_on(run.readout(&ctx)).unwrap());
            let readout = peak_growth(|| drop(block_on(run.readout(&ctx)).unwrap())).1;
            let checkpoint = peak_growth(|| {
                let path = dir.join("c.ckpt").to_str().unwrap().to_string();
                let mut file = snapshot::AtomicFile::create(&path, 0).unwrap();
                block_on(run.write_checkpoint(&ctx, &mut file, &path)).unwrap();
                file.commit().unwrap();
            })
            .1;
            (readout, checkpoint)
        })
        .unzip();
    let per = |g: &[f64]| (g[1] - g[0]) / (n2 - n1) as f64;
    let (readout, checkpoint) = (per(&readout), per(&checkpoint));
    eprintln!("read-out {readout:.1}, checkpoint {checkpoint:.1} bytes per particle");
    assert!(
        readout < 32.0,
        "a read-out: {readout:.1} bytes per particle"
    );
    // The file's writer holds at most 12 MiB of blocks whatever the N
    // (`snapshot/write_behind.rs`), at most 24 bytes per particle between
    // these two N if it held none at the first; a read-back of the state
    // would take 60.
    assert!(
        checkpoint < 30.0,
        "a checkpoint: {checkpoint:.1} bytes per particle"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

// An N the host's available memory cannot hold is refused with the reason
// and the largest N it can, as an N beyond the device is.
#[test]
fn a_run_beyond_the_host_memory_is_refused_with_the_reason() {
    use webgrav::app::host::{check_host_memory, host_max_particles, HOST_BYTES_PER_PARTICLE};
    let max = host_max_particles(SolverKind::Tree).expect("Linux says what is available");
    let err = check_host_memory(40 * max, SolverKind::Tree).unwrap_err();
    let said = err.to_string();
    assert!(
        said.contains(&format!(
            "{HOST_BYTES_PER_PARTICLE} bytes of host memory per particle"
        )),
        "{said}"
    );
    assert!(check_host_memory(max / 40, SolverKind::Tree).is_ok());
}
