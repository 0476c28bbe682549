//! The Hermite force kernels (acceleration, potential, jerk, snap, nearest
//! neighbour; f32 and double-single; whole and split j-ranges) and the GPU
//! predictor against f64 references on a Plummer model.
#![cfg(not(target_arch = "wasm32"))]

mod common;

use common::cases::{
    assert_hermite_ds_bounds, assert_hermite_f32_bounds, hermite_bodies, hermite_errors,
    HermiteErrors,
};
use webgrav::hermite::reference::rel_error3 as rel;
use webgrav::hermite::{Body, Force64, HermiteGpu, Order, Precision, Sinks};

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

// 1000 sources fill 7 tiles of 128 and part of an eighth: the force loop
// still runs the whole tile, whose 24 padding entries are the last source
// again without its mass. They add nothing (the same bounds as 1024
// sources) and never take the nearest neighbour, in every precision.
#[test]
fn a_part_filled_last_tile_adds_nothing() {
    let n = 1000;
    let bodies = hermite_bodies(n, EPS);
    let all: Vec<usize> = (0..n).collect();
    let ctx = common::gpu();
    let errors = |precision| {
        pollster::block_on(hermite_errors(
            &ctx,
            &bodies,
            EPS,
            Order::Six,
            precision,
            &all,
            None,
        ))
    };
    let (ds, f, fast) = (
        errors(Precision::Ds),
        errors(Precision::F32),
        errors(Precision::DsFast),
    );
    assert_hermite_f32_bounds(&f);
    assert_hermite_ds_bounds(&ds, &f);
    for (e, what) in [(&ds, "ds"), (&f, "f32"), (&fast, "ds-fast")] {
        assert_eq!(e.nn_wrong, 0, "{what}: nearest neighbours differ");
    }
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

// Five sinks against 32,768 sources split into 512 j-ranges (a small
// block step of a large run): 8 invocations per sink sum each range
// (`force_lanes`), and the reduce gives each sink 64 invocations of 8
// partial sums and merges them in 6 pairwise steps. Same bounds as the
// 8-split test above, and the nearest neighbours are the reference's (ties
// between splits go to the earlier one, as in a sum in split order).
#[test]
fn many_splits_reduce_over_lanes_matches_f64() {
    use webgrav::hermite::{reduce_lanes, sink_lanes, SplitPlan};
    let n = 32768;
    let b = common::cases::offset_plummer(n);
    let sinks = [0, 77, 5000, 17001, n - 1];
    let target = 4096;
    let lanes = sink_lanes(sinks.len() as u32);
    let plan = SplitPlan::new(sinks.len() as u32, n as u32, target, lanes);
    assert_eq!(
        (lanes, plan.nsplit, reduce_lanes(plan.nsplit)),
        (8, 512, 64)
    );
    let ctx = common::gpu();
    let e = pollster::block_on(hermite_errors(
        &ctx,
        &b,
        EPS,
        Order::Six,
        Precision::Ds,
        &sinks,
        Some(target),
    ));
    eprintln!("{e:?}");
    assert!(e.acc.max < 2e-6, "acc {:?}", e.acc);
    assert!(e.pot.max < 2e-7, "pot {:?}", e.pot);
    assert!(e.jerk.max < 5e-5, "jerk {:?}", e.jerk);
    assert!(e.snap.max < 5e-4, "snap {:?}", e.snap);
    assert_eq!(e.nn_wrong, 0, "nearest neighbours differ");
}

// The GPU predictor against the f64 Taylor series: j-particles with all
// derivatives set, predicted by 1/32 of a time unit from t0 = 1/3 (so t
// and t0 need double-single). Returns the largest position error and the
// largest velocity error relative to 1 + |v|.
fn predictor_errors(precision: Precision) -> (f64, f64) {
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
    pollster::block_on(gpu.evaluate(t0 + dt, Sinks::Active(&[0]), Order::Two, precision)).unwrap();
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
            let vp = p.vel[c] as f64 + p.vel_lo[c] as f64;
            ev = ev.max((vp - v).abs() / (1.0 + v.abs()));
        }
    }
    eprintln!(
        "predictor {}: max position error {ex:e}, velocity {ev:e}",
        precision.name()
    );
    (ex, ev)
}

// The position stays double-single: its error is the f32 error of the
// displacement (~1e-7 of ~0.05), far below the f32 spacing of the
// position itself (6e-8 at |x| ~ 1).
#[test]
fn predictor_matches_f64_taylor() {
    let (ex, ev) = predictor_errors(Precision::Ds);
    // Displacements are <= ~0.1 here: f32 relative rounding (a few 1e-8
    // after the Horner steps) gives < 1e-8; f32 positions would be 3e-8 off.
    assert!(ex < 1e-8, "position error {ex}");
    // Velocities are f32: a few ulp of |v| ~ 1.
    assert!(ev < 1e-6, "velocity error {ev}");
}

// `dp`'s f64 predictor: the series in f64 from double-single position,
// velocity, acceleration, jerk and snap (crackle f32, whose rounding moves
// the velocity by dt^4/24 |c| 6e-8 ~ 7e-13 here), stored as double-single
// pairs (2^-48 of |x| ~ 1: 4e-15). Measured on lavapipe: 1.4e-14 and
// 6e-13. The DS predictor is 2e-9 off in position and 3e-8 in velocity;
// f32 acceleration or jerk would give 3e-11 and 1.5e-9.
#[test]
fn dp_predictor_matches_f64_taylor() {
    if !common::gpu().has_f64 {
        eprintln!("adapter without f64: dp refused, see dp_is_refused_without_f64");
        return;
    }
    let (ex, ev) = predictor_errors(Precision::Dp);
    assert!(ex < 1e-13, "position error {ex}");
    assert!(ev < 3e-12, "velocity error {ev}");
}

// `dp`'s force kernels: f64 arithmetic on double-single inputs, results
// as double-single pairs (acc, pot, jerk) and f32 snap. Bounds: the
// inputs' 2^-48 relative error over separations down to ~0.01 and the
// outputs' 2^-48 give ~1e-13; measured on lavapipe: acc max 7.7e-14, pot
// 2.5e-15, jerk 1.4e-13 (the softening in f32 alone gave 1.5e-8). DS
// reaches 3e-7 (acc) and f32 3e-6, so these bounds also tell dp from them.
#[test]
fn dp_kernels_match_f64() {
    if !common::gpu().has_f64 {
        eprintln!("adapter without f64: dp refused, see dp_is_refused_without_f64");
        return;
    }
    let e = run(Order::Six, Precision::Dp, &all(), None);
    assert!(e.acc.max < 1e-12, "acc {:?}", e.acc);
    assert!(e.pot.max < 1e-13, "pot {:?}", e.pot);
    assert!(e.jerk.max < 1e-12, "jerk {:?}", e.jerk);
    // Snap: f64 sums of f64 terms, but the sources' predicted accelerations
    // and the result are f32.
    assert!(
        e.snap.median < 1e-6 && e.snap.p99 < 1e-5,
        "snap {:?}",
        e.snap
    );
    assert_eq!(e.nn_wrong, 0, "nearest neighbours differ");
    // The split j-range reduced in f64 loses nothing.
    let sinks: Vec<usize> = (0..N).step_by(29).collect();
    let s = run(Order::Four, Precision::Dp, &sinks, Some(64));
    assert!(s.acc.max < 1e-12 && s.jerk.max < 1e-12, "split {s:?}");
}

// Where the adapter has no f64 in shaders (every browser), `dp` is an
// error that says so, before any work; emulated here by a context that
// claims to lack it.
#[test]
fn dp_is_refused_without_f64() {
    let mut ctx = common::gpu();
    ctx.has_f64 = false;
    let mut gpu = HermiteGpu::new(&ctx, 16, 16, EPS).unwrap();
    let e = pollster::block_on(gpu.evaluate(
        0.0,
        webgrav::hermite::Sinks::Active(&[0]),
        Order::Four,
        Precision::Dp,
    ))
    .unwrap_err()
    .to_string();
    assert!(e.contains("SHADER_F64") && e.contains("use ds"), "{e}");
}

// `ds-fast` (Sapporo2's DS arithmetic: f32 sums of 32-interaction runs,
// bare 1/sqrt) sits between the two: clearly better than f32 in the
// potential and the acceleration (double-single positions and sums across
// runs), within a few times `ds`'s errors.
#[test]
fn ds_fast_kernels_sit_between_f32_and_ds() {
    let ds = run(Order::Six, Precision::Ds, &all(), None);
    let fast = run(Order::Six, Precision::DsFast, &all(), None);
    let f = run(Order::Six, Precision::F32, &all(), None);
    assert!(
        fast.acc.median < f.acc.median / 2.0,
        "acc {:?} vs f32 {:?}",
        fast.acc,
        f.acc
    );
    assert!(
        fast.pot.median < f.pot.median / 2.0,
        "pot {:?} vs f32 {:?}",
        fast.pot,
        f.pot
    );
    assert!(
        fast.acc.median < 8.0 * ds.acc.median,
        "acc {:?} vs ds {:?}",
        fast.acc,
        ds.acc
    );
    assert!(fast.acc.max < 1e-5 && fast.jerk.median < 1e-5, "{fast:?}");
    assert_eq!(fast.nn_wrong, 0, "nearest neighbours differ");
}

// Masses that f32 cannot hold (a mass function's, or 1/N for N not a power
// of two) reach the dp kernels as double-single pairs: with the masses
// rounded to f32 the potential would be off by ~3e-8 relative, here it
// stays at the f64 sum's rounding.
#[test]
fn dp_kernels_keep_masses_f32_cannot_hold() {
    let ctx = common::gpu();
    if !ctx.has_f64 {
        eprintln!("adapter without f64: dp refused, see dp_is_refused_without_f64");
        return;
    }
    let mut b = bodies();
    for (k, body) in b.iter_mut().enumerate() {
        // (3k + 4) / (3k + 3): never a dyadic fraction.
        body.mass *= 1.0 + 1.0 / (3.0 * (k as f64 + 1.0));
        assert_ne!(body.mass, body.mass as f32 as f64);
    }
    let e = pollster::block_on(hermite_errors(
        &ctx,
        &b,
        EPS,
        Order::Four,
        Precision::Dp,
        &all(),
        None,
    ));
    assert!(e.acc.max < 1e-12, "acc {:?}", e.acc);
    assert!(e.pot.max < 1e-13, "pot {:?}", e.pot);
    assert!(e.jerk.max < 1e-12, "jerk {:?}", e.jerk);
}

// `ds` adds every interaction to its sums exactly. A: a sink pulled by +1e6
// from its first source and -1e6 from its last, and by 1 from 40 sources
// of 0.025 in between. Half an ulp of 1e6 is 0.031, so f32 sums lose every
// small term against the 1e6 and end at 0, `ds-fast` loses the 31 summed
// in f32 with the first, and `ds` keeps them all. B: the 41 small terms
// first, then +1e6 and -1e6: the error of adding 1e6 to 1.025 is only
// recovered by a full two-sum (Dekker's fast two-sum, which assumes the
// sum larger than the term, is off by ~0.03 here). Where the shader
// compiler cancels the error terms of the double-single sums
// (reassociation), `ds` falls to f32 (A) or to the fast two-sum (B).
//
// Every force kernel of `ds`: `force` (one invocation per sink, `lanes`
// 1: the sum runs in the sources' order), `force_lanes` (64 invocations
// for the one sink, each summing its run exactly, the runs' sums merged in
// double-single), and where the adapter has f64 (lavapipe has)
// `force_ds64`, whose f64 sums need no two-sum. The f32 and ds-fast checks
// are of `force`'s f32 runs.
#[test]
fn ds_adds_every_interaction_exactly() {
    let ctx = common::gpu();
    let body = |mass: f64, x: f64| Body {
        mass,
        pos: [x, 0.0, 0.0],
        ..Default::default()
    };
    let acc_x_with = |b: &[Body], precision: Precision, lanes: u32, f64_sums: bool| {
        let mut gpu = HermiteGpu::new(&ctx, b.len() as u32, 1, 0.0).unwrap();
        gpu.set_ds_f64_sums(f64_sums);
        // One split.
        gpu.set_target_workgroups(1);
        gpu.set_max_sink_lanes(lanes);
        common::cases::upload(&mut gpu, b);
        let r = pollster::block_on(gpu.evaluate(0.0, Sinks::Active(&[0]), Order::Four, precision))
            .unwrap();
        Force64::from(&r[0]).acc[0]
    };
    let acc_x =
        |b: &[Body], precision: Precision, lanes: u32| acc_x_with(b, precision, lanes, false);
    let mut a = vec![body(1e-30, 0.0), body(1.0, 1e-3)];
    a.extend((0..40).map(|_| body(0.025, 1.0)));
    a.push(body(1.0, -1e-3));
    let (fast, f) = (
        acc_x(&a, Precision::DsFast, 1),
        acc_x(&a, Precision::F32, 1),
    );
    assert!((fast - 1.0).abs() > 0.5, "A: ds-fast {fast}");
    assert!((f - 1.0).abs() > 0.5, "A: f32 {f}");
    let mut b = vec![body(1e-30, 0.0)];
    b.extend((0..41).map(|_| body(0.025, 1.0)));
    b.extend([body(1.0, 1e-3), body(1.0, -1e-3)]);
    let mut kernels = vec![(1, false), (64, false)];
    if ctx.has_f64 {
        kernels.push((1, true));
    }
    for (lanes, f64_sums) in kernels {
        let ds = acc_x_with(&a, Precision::Ds, lanes, f64_sums);
        let what = format!("{lanes} lanes, f64 sums {f64_sums}");
        assert!((ds - 1.0).abs() < 1e-5, "A: ds {ds}, {what}");
        let ds = acc_x_with(&b, Precision::Ds, lanes, f64_sums);
        assert!((ds - 1.025).abs() < 1e-5, "B: ds {ds}, {what}");
    }
}

// `ds` sums the same f32 interactions in f64 (`force_ds64`, the default
// where the adapter has f64) or in double-single two-sums (`force`, what a
// browser runs): the two agree to the double-single sums' rounding
// (2^-48 of the sum per addition, over 1024 sources; the f32
// interactions themselves are good to 1e-7), and the f64 sums are no
// further from the f64 reference than the two-sums. Measured on lavapipe: 3.6e-13
// apart at most; mean acceleration error 4.05e-8 for both.
#[test]
fn ds_f64_sums_agree_with_the_two_sums() {
    let ctx = common::gpu();
    if !ctx.has_f64 {
        eprintln!("adapter without f64: ds sums in double-single only");
        return;
    }
    let b = bodies();
    let sinks: Vec<u32> = (0..N as u32).collect();
    let reference = {
        let sinks: Vec<usize> = (0..N).collect();
        webgrav::hermite::reference::hermite_forces(&b, &sinks, EPS)
    };
    let eval = |f64_sums: bool| -> Vec<Force64> {
        let mut gpu = HermiteGpu::new(&ctx, N as u32, N as u32, EPS).unwrap();
        gpu.set_ds_f64_sums(f64_sums);
        assert_eq!(
            gpu.ds_sums(),
            if f64_sums { "f64" } else { "double-single" }
        );
        // Several splits, so the partial sums are reduced too.
        gpu.set_target_workgroups(16);
        gpu.set_max_sink_lanes(1);
        common::cases::upload(&mut gpu, &b);
        let r =
            pollster::block_on(gpu.evaluate(0.0, Sinks::Active(&sinks), Order::Six, Precision::Ds))
                .unwrap();
        r.iter().map(Force64::from).collect()
    };
    let (wide, two_sum) = (eval(true), eval(false));
    let (mut worst, mut err_wide, mut err_two) = (0f64, 0f64, 0f64);
    for ((w, t), r) in wide.iter().zip(&two_sum).zip(&reference) {
        worst = worst
            .max(rel(w.acc, t.acc))
            .max(((w.pot - t.pot) / t.pot).abs())
            .max(rel(w.jerk, t.jerk));
        err_wide += rel(w.acc, r.acc);
        err_two += rel(t.acc, r.acc);
        assert_eq!(w.nn_id, t.nn_id);
    }
    eprintln!(
        "f64 sums against two-sums: {worst:.2e}; mean acc error {:.3e} / {:.3e}",
        err_wide / N as f64,
        err_two / N as f64
    );
    assert!(worst < 1e-11, "f64 sums against two-sums: {worst:e}");
    assert!(
        worst > 0.0,
        "the two kernels gave identical sums: was f64 summing used?"
    );
    assert!(err_wide <= 1.0001 * err_two, "{err_wide} vs {err_two}");
}

// Blocks of 1 to 32 sinks run `force_lanes` (64 to 2 invocations per
// sink) and match the f64 reference as closely as `force` does, at every
// precision with a lanes kernel, with the nearest neighbours the
// reference's; the two kernels agree to double-single rounding.
#[test]
fn few_sink_blocks_with_lanes_match_f64_and_force() {
    use webgrav::hermite::sink_lanes;
    assert_eq!([1, 2, 3, 17, 32, 33].map(sink_lanes), [64, 32, 16, 2, 2, 1]);
    let ctx = common::gpu();
    let b = bodies();
    let reference: Vec<Force64> = {
        let sinks: Vec<usize> = (0..N).collect();
        webgrav::hermite::reference::hermite_forces(&b, &sinks, EPS)
    };
    for ni in [1usize, 3, 17, 32] {
        let sinks: Vec<u32> = (0..ni as u32).map(|k| k * 31 + 5).collect();
        let eval = |precision: Precision, lanes: u32| -> Vec<Force64> {
            let mut gpu = HermiteGpu::new(&ctx, N as u32, ni as u32, EPS).unwrap();
            // Several splits, so lanes and splits are both merged.
            gpu.set_target_workgroups(4);
            gpu.set_max_sink_lanes(lanes);
            common::cases::upload(&mut gpu, &b);
            let r =
                pollster::block_on(gpu.evaluate(0.0, Sinks::Active(&sinks), Order::Six, precision))
                    .unwrap();
            r.iter().map(Force64::from).collect()
        };
        for precision in [Precision::Ds, Precision::DsFast, Precision::F32] {
            let (lanes, one) = (eval(precision, 64), eval(precision, 1));
            // The whole-model bounds' maxima (`common::cases`).
            let bound = if precision == Precision::F32 {
                2e-5
            } else {
                2e-6
            };
            for ((l, o), &i) in lanes.iter().zip(&one).zip(&sinks) {
                let r = &reference[i as usize];
                let what = format!("{} sinks, {}, sink {i}", ni, precision.name());
                assert!(
                    rel(l.acc, r.acc) < bound,
                    "acc {what}: {:?} {:?}",
                    l.acc,
                    r.acc
                );
                assert!(((l.pot - r.pot) / r.pot).abs() < bound, "pot {what}");
                assert!(rel(l.jerk, r.jerk) < 25.0 * bound, "jerk {what}");
                assert!(rel(l.snap, r.snap) < 250.0 * bound, "snap {what}");
                assert_eq!(l.nn_id, r.nn_id, "nearest neighbour {what}");
                if precision == Precision::Ds {
                    // Both exact sums of the same f32 interactions.
                    assert!(rel(l.acc, o.acc) < 1e-12, "acc lanes vs force {what}");
                    assert!(rel(l.snap, o.snap) < 1e-10, "snap lanes vs force {what}");
                }
            }
        }
    }
}

// The GRAPE library's spinning read-back (`Wait::Spin`, its default on
// GPUs) returns the forces the driver's blocking wait does, bit for bit,
// for two evaluations in turn (one into each read-back buffer).
#[test]
fn spinning_read_back_returns_the_same_forces() {
    use webgrav::gpu::buffers::Wait;
    let ctx = common::gpu();
    let b = bodies();
    let forces = |wait: Wait| {
        let mut gpu = HermiteGpu::new(&ctx, N as u32, 8, EPS).unwrap();
        gpu.set_wait(wait);
        common::cases::upload(&mut gpu, &b);
        let first = pollster::block_on(gpu.evaluate(
            0.0,
            Sinks::Active(&[3, 500]),
            Order::Six,
            Precision::Ds,
        ))
        .unwrap();
        let second = pollster::block_on(gpu.evaluate(
            0.0,
            Sinks::Active(&[7, 8, 900]),
            Order::Six,
            Precision::Ds,
        ))
        .unwrap();
        (first, second)
    };
    let (spin, block) = (forces(Wait::Spin), forces(Wait::Block));
    assert_eq!(spin.0.len(), 2);
    assert_eq!(spin.1.len(), 3);
    assert_eq!(spin, block);
    let reference = webgrav::hermite::reference::hermite_forces(&b, &[7], EPS);
    let f = Force64::from(&spin.1[0]);
    let d: f64 = (0..3)
        .map(|k| (f.acc[k] - reference[0].acc[k]).powi(2))
        .sum();
    let m: f64 = reference[0].acc.iter().map(|a| a * a).sum();
    assert!(
        (d / m).sqrt() < 2e-6,
        "acc {:?} {:?}",
        f.acc,
        reference[0].acc
    );
}
