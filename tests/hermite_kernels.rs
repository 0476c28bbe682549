//! The Hermite force kernels (acceleration, potential, jerk, snap, nearest
//! neighbour; f32 and double-single; whole and split j-ranges) and the GPU
//! predictor against f64 references on a Plummer model.
#![cfg(not(target_arch = "wasm32"))]

mod common;

use common::cases::{
    assert_hermite_ds_bounds, assert_hermite_f32_bounds, hermite_bodies, hermite_errors,
    HermiteErrors,
};
use webgrav::hermite::{Body, HermiteGpu, Order, Precision};

const N: usize = 1024;
const EPS: f64 = 0.01;

fn bodies() -> Vec<Body> {
    hermite_bodies(N, EPS)
}

fn run(order: Order, precision: Precision, sinks: &[usize], target: Option<u32>) -> HermiteErrors {
    let ctx = common::gpu();
    let e = pollster::block_on(hermite_errors(
        &ctx,
        &bodies(),
        EPS,
        order,
        precision,
        sinks,
        target,
    ));
    eprintln!(
        "{order:?} {}: {} sinks\n {e:?}",
        precision.name(),
        sinks.len()
    );
    e
}

fn all() -> Vec<usize> {
    (0..N).collect()
}

// Bounds and why: `common::cases` (shared with the browser test).
#[test]
fn f32_kernels_match_f64() {
    assert_hermite_f32_bounds(&run(Order::Six, Precision::F32, &all(), None));
}

#[test]
fn ds_kernels_match_f64_and_beat_f32() {
    let ds = run(Order::Six, Precision::Ds, &all(), None);
    let f = run(Order::Six, Precision::F32, &all(), None);
    assert_hermite_ds_bounds(&ds, &f);
}

// A small active block (36 of 1024) with the j-range split into 8 pieces
// reduced on the GPU: same bounds as the whole DS evaluation (measured acc
// max 1.7e-7, pot max 1.4e-8, jerk max 6e-7), so the split and the
// reduction lose nothing.
#[test]
fn small_block_split_over_j_matches_f64() {
    let sinks: Vec<usize> = (0..N).step_by(29).collect();
    let e = run(Order::Four, Precision::Ds, &sinks, Some(64));
    assert!(e.acc.max < 2e-6, "acc {:?}", e.acc);
    assert!(e.pot.max < 2e-7, "pot {:?}", e.pot);
    assert!(e.jerk.max < 5e-5, "jerk {:?}", e.jerk);
    assert_eq!(e.nn_wrong, 0, "nearest neighbours differ");
}

// The GPU predictor against the f64 Taylor series: j-particles with all
// derivatives set, predicted by 1/32 of a time unit from t0 = 1/3 (so t
// and t0 need double-single). The position stays double-single: its error
// is the f32 error of the displacement (~1e-7 of ~0.05), far below the f32
// spacing of the position itself (6e-8 at |x| ~ 1).
#[test]
fn predictor_matches_f64_taylor() {
    use webgrav::gpu::buffers::read_vec;
    use webgrav::gpu::layout::PredJ;
    use webgrav::hermite::Sinks;
    let ctx = common::gpu();
    let b = bodies();
    let n = 256;
    let mut gpu = HermiteGpu::new(&ctx, n as u32, 1, EPS).unwrap();
    let t0 = 1.0 / 3.0;
    let dt = 1.0 / 32.0;
    let deriv = |k: usize, s: f64| [0, 1, 2].map(|c| s * ((k * 3 + c) as f64 * 0.37).sin());
    let states: Vec<Body> = (0..n)
        .map(|k| Body {
            t0,
            jerk: deriv(k, 3.0),
            snap: deriv(k + 1, 30.0),
            crackle: deriv(k + 2, 300.0),
            ..b[k]
        })
        .collect();
    let recs: Vec<_> = (0..n).map(|k| states[k].record(k as u32)).collect();
    gpu.set_j(&(0..n as u32).collect::<Vec<_>>(), &recs);
    pollster::block_on(gpu.evaluate(t0 + dt, Sinks::Active(&[0]), Order::Two, Precision::Ds))
        .unwrap();
    let pred: Vec<PredJ> =
        pollster::block_on(read_vec(&ctx.device, &ctx.queue, &gpu.store.pred)).unwrap();
    let (mut ex, mut ev) = (0f64, 0f64);
    for (s, p) in states.iter().zip(&pred) {
        for c in 0..3 {
            let x = s.pos[c]
                + dt * (s.vel[c]
                    + dt / 2.0
                        * (s.acc[c]
                            + dt / 3.0
                                * (s.jerk[c] + dt / 4.0 * (s.snap[c] + dt / 5.0 * s.crackle[c]))));
            let v = s.vel[c]
                + dt * (s.acc[c]
                    + dt / 2.0 * (s.jerk[c] + dt / 3.0 * (s.snap[c] + dt / 4.0 * s.crackle[c])));
            ex = ex.max((p.pos_hi[c] as f64 + p.pos_lo[c] as f64 - x).abs());
            ev = ev.max((p.vel[c] as f64 - v).abs() / (1.0 + v.abs()));
        }
    }
    eprintln!("predictor: max position error {ex:e}, velocity {ev:e}");
    // Displacements are <= ~0.1 here: f32 relative rounding (a few 1e-8
    // after the Horner steps) gives < 1e-8; f32 positions would be 3e-8 off.
    assert!(ex < 1e-8, "position error {ex}");
    // Velocities are f32: a few ulp of |v| ~ 1.
    assert!(ev < 1e-6, "velocity error {ev}");
}
