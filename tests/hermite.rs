//! The block-step Hermite integrators on Plummer models: energy over one
//! N-body time unit, 6th against 4th order at equal cost, convergence with
//! η, block steps against shared steps, and the block-step invariants.
#![cfg(not(target_arch = "wasm32"))]

mod common;

use webgrav::hermite::{Criterion, HermiteConfig, HermiteOrder, HermiteSimulation, Precision};
use webgrav::state::Model;

fn sim(n: usize, config: HermiteConfig) -> HermiteSimulation {
    let ctx = common::gpu();
    let p = Model::Plummer.generate(n, 6).unwrap();
    pollster::block_on(HermiteSimulation::new(&ctx, &p, config, 0.0)).unwrap()
}

/// |ΔE/E| of a run from 0 to `t_end`, and the finished simulation.
fn energy_run(n: usize, config: HermiteConfig, t_end: f64) -> (f64, HermiteSimulation) {
    let mut s = sim(n, config);
    let e0 = pollster::block_on(s.energy()).unwrap().2;
    pollster::block_on(s.run_until(t_end)).unwrap();
    let e1 = pollster::block_on(s.energy()).unwrap().2;
    (((e1 - e0) / e0).abs(), s)
}

/// RMS distance between two sets of positions.
fn rms(a: &[[f64; 3]], b: &[[f64; 3]]) -> f64 {
    let s: f64 = a
        .iter()
        .zip(b)
        .map(|(x, y)| (0..3).map(|k| (x[k] - y[k]).powi(2)).sum::<f64>())
        .sum();
    (s / a.len() as f64).sqrt()
}

fn positions(n: usize, config: HermiteConfig, t_end: f64) -> (Vec<[f64; 3]>, u64) {
    let mut s = sim(n, config);
    pollster::block_on(s.run_until(t_end)).unwrap();
    assert_eq!(s.time, t_end);
    (s.positions(), s.stats.force_evaluations)
}

// N = 1024, ε = 1/64, η = 0.02 (NBODY6's ETAI), double-single forces, one
// N-body time unit. The seeds' 4th-order block-step runs of this kind: the
// GRAPE-6 and Kirin (f32 GPU) runs of Bédorf (2007, tables 4.5-4.6) lose
// 1.2e-6 in a quarter time unit at kira's a = 0.3 and 1.5e-8-2.8e-8 at
// a = 0.2 (ε = 1/256, N = 256-65536); Sapporo2's 6th-order DS runs reach
// 1e-10 per time unit. Measured here (seed 6): 1.2e-6 with about 154 000
// force evaluations (2037 block steps). The bound 5e-6 is the seeds' range
// for this accuracy parameter with a factor ~4 of margin for other GPUs'
// rounding; a 3rd-order corrector, a missing jerk term or a wrong
// predictor give 1e-4 or worse. It holds for this model, not every one
// of N = 1024: a close pair makes the error of about one realization in
// four larger (7 of seeds 1–30 of the sequential generator before the
// per-particle streams, 4 of seeds 1–10 after).
#[test]
fn hermite4_plummer_one_time_unit_conserves_energy() {
    let config = HermiteConfig::new(HermiteOrder::Four, Precision::Ds, 0.02, 1.0 / 64.0);
    let (de, s) = energy_run(1024, config, 1.0);
    eprintln!(
        "hermite4 N=1024 t=1: |dE/E| = {de:.3e}, {} block steps, {} force evaluations, levels now {:?}, steps per level {:?}",
        s.stats.block_steps,
        s.stats.force_evaluations,
        s.levels(),
        s.stats.steps_per_level
    );
    assert!(de < 5e-6, "energy error {de}");
    assert!(
        s.bodies.iter().all(|b| b.t0 == 1.0),
        "not synchronised at t = 1"
    );
    // Individual steps: far fewer evaluations than N per block step.
    assert!(s.stats.force_evaluations < s.stats.block_steps * 1024 / 4);
}

// The accuracy goal of the 6th-order integrator with the settings a user
// gets without choosing any (RUN_PARAMS' defaults: η = 0.02, Sapporo2's
// criterion, ε = 0.01, DS forces): Plummer N = 1024 (seed 1, as `webgrav
// run --solver hermite6 -n 1024` uses), one time unit, |dE/E| <= 1e-9.
// Measured on lavapipe: 5.4e-10 with 3005 block steps (Aarseth's criterion
// at the same η: see BENCHMARKS.md). Sapporo2 reports ~1e-10 for DS at
// N >= 16k. A 5th-order corrector, f32 positions or a criterion that
// ignored η would miss it by orders of magnitude.
#[test]
fn hermite6_default_settings_reach_the_accuracy_goal() {
    use webgrav::run::{hermite::hermite_config, RunParams, SolverKind};
    let params = RunParams {
        solver: SolverKind::Hermite6,
        ..RunParams::default()
    };
    let config = hermite_config(&params);
    assert_eq!(config.eps, 0.01_f32 as f64);
    let ctx = common::gpu();
    let p = Model::Plummer.generate(1024, 1).unwrap();
    let mut s = pollster::block_on(HermiteSimulation::new(&ctx, &p, config, 0.0)).unwrap();
    let e0 = pollster::block_on(s.energy()).unwrap().2;
    pollster::block_on(s.run_until(1.0)).unwrap();
    let e1 = pollster::block_on(s.energy()).unwrap().2;
    let de = ((e1 - e0) / e0).abs();
    eprintln!(
        "hermite6 defaults N=1024 t=1: |dE/E| = {de:.3e}, {} block steps, {} force evaluations",
        s.stats.block_steps, s.stats.force_evaluations
    );
    assert!(de <= 1e-9, "energy error {de}");
}

// Same problem at N = 256 over 1/4 time unit: 4th order at η = 0.02 takes
// about 8400 force evaluations for |ΔE/E| ≈ 1.4e-6; 6th order at
// η = 0.08 takes fewer (about 6000 with Sapporo2's criterion, 5000 with
// Aarseth's) and loses 2.5e-9 (9e-9 with Aarseth's). The assertion asks for
// fewer evaluations and 10x less error, far inside what was measured.
#[test]
fn sixth_order_beats_fourth_at_equal_cost() {
    let c4 = HermiteConfig::new(HermiteOrder::Four, Precision::Ds, 0.02, 1.0 / 64.0);
    let c6 = HermiteConfig::new(HermiteOrder::Six, Precision::Ds, 0.08, 1.0 / 64.0);
    let (e4, s4) = energy_run(256, c4, 0.25);
    let (e6, s6) = energy_run(256, c6, 0.25);
    let (f4, f6) = (s4.stats.force_evaluations, s6.stats.force_evaluations);
    eprintln!("4th: |dE/E| {e4:.3e} with {f4} evaluations; 6th: {e6:.3e} with {f6}");
    assert!(f6 <= f4, "6th order used more evaluations ({f6} > {f4})");
    assert!(
        e6 < e4 / 10.0,
        "6th order error {e6} not well below 4th {e4}"
    );
}

// Convergence with η (inside the square root of Aarseth's criterion, so
// η/2 shrinks every step by √2 and the error of order p by 2^(p/2); η/4
// moves every particle down one block level, 2^p). Heavily softened
// (ε = 0.1, N = 128, 1/4 time unit) so every particle is in the
// asymptotic regime; errors are RMS positions against a 6th-order run with
// shared steps of 2^-11. Measured: 4th order η = 0.02, 0.01, 0.005:
// 2.1e-7, 9.4e-8, 8.7e-9 (η/4 ratio 24, ideal 16); 6th order η = 0.16,
// 0.08, 0.04: 6.4e-8, 4.1e-9, 9.3e-10 (ratio 69, ideal 64). Block levels
// are discrete, so single halvings scatter (2.2 to 16 measured); the test
// asks every halving to help and the η/4 ratio to be within a factor 3 of
// 2^p. A scheme of one order lower would give ratios of 2^(p-1) or less.
// The 6th-order runs use Aarseth's criterion: Sapporo2's (the default)
// takes smaller steps at equal η and reaches the reference's floor (~3e-10)
// at η = 0.04 (measured 5.4e-9, 9.3e-10, 3.6e-10).
#[test]
fn halving_eta_reduces_error_at_the_order_rate() {
    let (n, eps, t) = (128, 0.1, 0.25);
    let mut reference = HermiteConfig::new(HermiteOrder::Six, Precision::Ds, 0.02, eps);
    reference.shared_dt = Some(1.0 / 2048.0);
    let (xr, _) = positions(n, reference, t);
    for (order, p, etas) in [
        (HermiteOrder::Four, 4, [0.02, 0.01, 0.005]),
        (HermiteOrder::Six, 6, [0.16, 0.08, 0.04]),
    ] {
        let err: Vec<f64> = etas
            .iter()
            .map(|&eta| {
                let config = HermiteConfig {
                    criterion: Criterion::Aarseth,
                    ..HermiteConfig::new(order, Precision::Ds, eta, eps)
                };
                rms(&positions(n, config, t).0, &xr)
            })
            .collect();
        eprintln!("{order:?}: eta {etas:?} -> rms position error {err:?}");
        assert!(err[1] < err[0] && err[2] < err[1], "{order:?}: {err:?}");
        let ideal = 2f64.powi(p);
        let ratio = err[0] / err[2];
        assert!(
            ratio > ideal / 3.0 && ratio < ideal * 3.0,
            "{order:?}: error ratio {ratio} for eta/4, ideal {ideal}"
        );
    }
}

// Block steps: at every block step all steps are powers of two no larger
// than dt_max, each particle's t0 is a multiple of its step, and the
// active block is exactly the particles due then. The run (6th order,
// η = 0.02, N = 256, ε = 1/64, 1/8 time unit, levels 0 to 9) must match a
// run with one shared step equal to its smallest step (2^-12): measured
// RMS difference 2.0e-10, the same against a shared step of 2^-13 (so the
// shared run is converged and the difference is the block run's own
// error). The tolerance 2e-9 is 10x that; a block-step bug (a particle
// predicted from the wrong t0, a skipped or doubled step) gives >1e-5.
#[test]
fn block_steps_are_powers_of_two_and_match_shared_steps() {
    let (n, eps, t) = (256, 1.0 / 64.0, 0.125);
    let config = HermiteConfig::new(HermiteOrder::Six, Precision::Ds, 0.02, eps);
    let mut s = sim(n, config);
    let mut smallest = config.dt_max;
    while s.next_time() <= t {
        let t1 = s.next_time();
        let due = s.bodies.iter().filter(|b| b.t0 + b.dt == t1).count();
        let active = pollster::block_on(s.step()).unwrap();
        assert_eq!(active, due);
        for b in &s.bodies {
            assert_eq!(b.dt.log2().fract(), 0.0, "step {} not a power of two", b.dt);
            assert!(b.dt <= config.dt_max);
            assert_eq!(
                (b.t0 / b.dt).fract(),
                0.0,
                "t0 {} not a multiple of {}",
                b.t0,
                b.dt
            );
            assert!(b.t0 <= s.time && b.t0 + b.dt > s.time);
            smallest = smallest.min(b.dt);
        }
    }
    assert_eq!(s.time, t);
    let levels = s.stats.steps_per_level.len();
    eprintln!(
        "block run: {} block steps, {} evaluations, steps per level {:?}",
        s.stats.block_steps, s.stats.force_evaluations, s.stats.steps_per_level
    );
    assert!(levels >= 4, "expected several block levels, got {levels}");
    let mut shared = config;
    shared.shared_dt = Some(smallest);
    let (xs, _) = positions(n, shared, t);
    let diff = rms(&s.positions(), &xs);
    eprintln!("block vs shared dt = {smallest}: rms position difference {diff:.3e}");
    assert!(diff < 2e-9, "block and shared runs differ by {diff}");
}

// `webgrav run --solver hermite4` end to end: JSON lines of the energy
// error at each --log-every, the end state written. N = 128 for 1/8 time
// unit is a second on lavapipe; the bound is the loose 1e-5 of a short
// 4th-order run (measured 4e-8).
#[test]
fn cli_runs_hermite() {
    let dir = common::fresh_dir("hermite-cli");
    std::fs::create_dir_all(&dir).unwrap();
    let out = dir.join("end.csv");
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_webgrav"))
        .args(["run", "--solver", "hermite4", "-n", "128", "--eps", "0.02"])
        .args(["--eta", "0.02", "--precision", "f32", "--t-end", "0.125"])
        .args(["--log-every", "0.0625", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 2, "{stdout}");
    let last: serde_json::Value = serde_json::from_str(lines[1]).unwrap();
    assert_eq!(last["t"], 0.125);
    assert!(last["rel_energy_error"].as_f64().unwrap() < 1e-5, "{last}");
    assert!(last["force_evaluations"].as_u64().unwrap() > 128);
    assert!(std::fs::metadata(&out).unwrap().len() > 0);
    std::fs::remove_dir_all(&dir).unwrap();
}

// The browser's Hermite case, natively (bounds in `common::cases`).
#[test]
fn hermite6_short_run_as_in_the_browser() {
    let ctx = common::gpu();
    let (err, sim) = pollster::block_on(common::cases::hermite6_short_run(&ctx));
    eprintln!("hermite6 short run: |dE/E| = {err:e}");
    common::cases::assert_hermite6_short_run(err, &sim);
}
