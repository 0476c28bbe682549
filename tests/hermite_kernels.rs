//! The Hermite force kernels (acceleration, potential, jerk, snap, nearest
//! neighbour; f32 and double-single; whole and split j-ranges) and the GPU
//! predictor against f64 references on a Plummer model.
#![cfg(not(target_arch = "wasm32"))]

mod common;
#[path = "common/hermite_input.rs"]
mod hermite_input;

use hermite_input::upload;

use webgrav::direct::hermite_force::{Force64, HermiteGpu, Order, Precision, Sinks};
use webgrav::direct::predict::JState;
use webgrav::direct::reference::{hermite_forces, rel_error3, Body64, ErrorStats, HermiteF64};

const N: usize = 1024;
const EPS: f64 = 0.01;

fn bodies() -> Vec<Body64> {
    hermite_input::bodies(N, EPS)
}

struct Errors {
    acc: ErrorStats,
    pot: ErrorStats,
    jerk: ErrorStats,
    snap: ErrorStats,
    /// Sinks whose nearest neighbour is not the reference's and not at the
    /// same distance (to f32 rounding) either.
    nn_wrong: usize,
}

fn compare(gpu: &[Force64], reference: &[HermiteF64], b: &[Body64], sinks: &[usize]) -> Errors {
    let e = |f: &dyn Fn(&Force64, &HermiteF64) -> f64| -> ErrorStats {
        ErrorStats::of(
            &gpu.iter()
                .zip(reference)
                .map(|(g, r)| f(g, r))
                .collect::<Vec<_>>(),
        )
    };
    let nn_wrong = gpu
        .iter()
        .zip(reference)
        .zip(sinks)
        .filter(|((g, r), &i)| {
            if g.nn_id as usize == r.nn {
                return false;
            }
            let Some(other) = b.get(g.nn_id as usize) else {
                return true;
            };
            let d = [0, 1, 2].map(|k| other.pos[k] - b[i].pos[k]);
            let d2 = d[0] * d[0] + d[1] * d[1] + d[2] * d[2];
            (d2 - r.nn_d2).abs() > 1e-5 * r.nn_d2
        })
        .count();
    Errors {
        acc: e(&|g, r| rel_error3(g.acc, r.acc)),
        pot: e(&|g, r| ((g.pot - r.pot) / r.pot).abs()),
        jerk: e(&|g, r| rel_error3(g.jerk, r.jerk)),
        snap: e(&|g, r| rel_error3(g.snap, r.snap)),
        nn_wrong,
    }
}

fn run(order: Order, precision: Precision, sinks: &[usize], target: Option<u32>) -> Errors {
    let ctx = common::gpu();
    let b = bodies();
    let mut gpu = HermiteGpu::new(&ctx, N as u32, N as u32, EPS).unwrap();
    if let Some(t) = target {
        gpu.set_target_workgroups(t);
    }
    upload(&mut gpu, &b);
    let active: Vec<u32> = sinks.iter().map(|&i| i as u32).collect();
    let res =
        pollster::block_on(gpu.evaluate(0.0, Sinks::Active(&active), order, precision)).unwrap();
    let res: Vec<Force64> = res.iter().map(Force64::from).collect();
    let reference = hermite_forces(&b, sinks, EPS);
    let e = compare(&res, &reference, &b, sinks);
    eprintln!(
        "{order:?} {}: {} sinks\n acc {:?}\n pot {:?}\n jerk {:?}\n snap {:?}\n nn wrong {}",
        precision.name(),
        sinks.len(),
        e.acc,
        e.pot,
        e.jerk,
        e.snap,
        e.nn_wrong
    );
    e
}

fn all() -> Vec<usize> {
    (0..N).collect()
}

// Measured on lavapipe (N = 1024, eps = 0.01, off-centre Plummer), f32:
// acc median 4e-7, max 3e-6; pot max 1.4e-6; jerk median 6e-7, max 6e-6;
// snap median 7e-7, p99 4e-6. An f32 sum carries ~sqrt(N) 2^-24 ≈ 2e-6
// of relative rounding, more where terms cancel (|a| small near the
// centre; the snap cancels most). The bounds leave a factor 5-10 for
// other GPUs' rounding and sit orders of magnitude below real bugs (a
// missed tile, a wrong sign or a skipped term give errors >= 1e-3).
#[test]
fn f32_kernels_match_f64() {
    let e = run(Order::Six, Precision::F32, &all(), None);
    assert!(e.acc.median < 2e-6 && e.acc.max < 2e-5, "acc {:?}", e.acc);
    assert!(e.pot.median < 2e-6 && e.pot.max < 1e-5, "pot {:?}", e.pot);
    assert!(
        e.jerk.median < 3e-6 && e.jerk.max < 1e-4,
        "jerk {:?}",
        e.jerk
    );
    assert!(
        e.snap.median < 5e-6 && e.snap.p99 < 1e-4,
        "snap {:?}",
        e.snap
    );
    assert_eq!(e.nn_wrong, 0, "nearest neighbours differ");
}

// Double-single against the same reference. Measured on lavapipe: acc
// median 3e-8 (13x better than f32), pot median 6.5e-9 (50x), jerk median
// 1.4e-7 (4x); on an H100, whose f32 rsqrt is more accurate than
// lavapipe's: acc 2.5e-8 (3.4x better than its f32), pot 4.9e-9 (8.5x).
// The snap is f32 in both modes. The remaining DS error is the f32
// arithmetic of each interaction, which averages out in the sums. If a
// compiler reassociated the two-sum error terms away, DS would fall back
// to the f32 errors (ratio ~1): the ratio checks (2x for acc, 4x for pot)
// catch that, as they caught lavapipe before shaders/ds.wgsl guarded every
// intermediate.
#[test]
fn ds_kernels_match_f64_and_beat_f32() {
    let ds = run(Order::Six, Precision::Ds, &all(), None);
    let f = run(Order::Six, Precision::F32, &all(), None);
    assert!(
        ds.acc.median < 1.5e-7 && ds.acc.max < 2e-6,
        "acc {:?}",
        ds.acc
    );
    assert!(
        ds.pot.median < 3e-8 && ds.pot.max < 2e-7,
        "pot {:?}",
        ds.pot
    );
    assert!(
        ds.jerk.median < 1e-6 && ds.jerk.max < 5e-5,
        "jerk {:?}",
        ds.jerk
    );
    assert!(
        ds.snap.median < 5e-6 && ds.snap.p99 < 1e-4,
        "snap {:?}",
        ds.snap
    );
    assert!(
        ds.acc.median < f.acc.median / 2.0,
        "DS acc {:?} not clearly better than f32 {:?}",
        ds.acc,
        f.acc
    );
    assert!(
        ds.pot.median < f.pot.median / 4.0,
        "DS pot {:?} not clearly better than f32 {:?}",
        ds.pot,
        f.pot
    );
    assert_eq!(ds.nn_wrong, 0, "nearest neighbours differ");
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
    let ctx = common::gpu();
    let b = bodies();
    let n = 256;
    let mut gpu = HermiteGpu::new(&ctx, n as u32, 1, EPS).unwrap();
    let t0 = 1.0 / 3.0;
    let dt = 1.0 / 32.0;
    let deriv = |k: usize, s: f64| [0, 1, 2].map(|c| s * ((k * 3 + c) as f64 * 0.37).sin());
    let states: Vec<JState> = (0..n)
        .map(|k| JState {
            id: k as u32,
            mass: b[k].mass,
            t0,
            pos: b[k].pos,
            vel: b[k].vel,
            acc: b[k].acc,
            jerk: deriv(k, 3.0),
            snap: deriv(k + 1, 30.0),
            crackle: deriv(k + 2, 300.0),
        })
        .collect();
    let recs: Vec<_> = states.iter().map(|s| s.record()).collect();
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
