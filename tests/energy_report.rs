//! The energies, virial ratios and momenta a run reports are those of the
//! state it writes: recomputed here from the written CSV file with an f64
//! pairwise sum of our own, they agree to 1e-12 relative, for every
//! integrator. And the double-single potential kernel that sums them at
//! large N agrees with the f64 sum to ~1e-14.
#![cfg(not(target_arch = "wasm32"))]

mod common;

use pollster::block_on;
use webgrav::hermite::Precision;
use webgrav::run::{write_state, Readout, Run, RunParams, SolverKind};
use webgrav::state::energy::{
    potentials_f64, potentials_f64_of, PotentialKernel, PotentialRule, PotentialSum,
};
use webgrav::state::Model;

/// (mass, position, velocity) of every particle of a CSV snapshot, each
/// number parsed as `T` (f32 recovers a leapfrog's f32 state exactly).
fn read_csv<T: std::str::FromStr + Into<f64>>(text: &str) -> Vec<(f64, [f64; 3], [f64; 3])>
where
    T::Err: std::fmt::Debug,
{
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let (x, v, m) = (
        [col("x"), col("y"), col("z")],
        [col("vx"), col("vy"), col("vz")],
        col("m"),
    );
    lines
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            let num = |k: usize| f[k].parse::<T>().unwrap().into();
            (num(m), x.map(num), v.map(num))
        })
        .collect()
}

/// K, W, 2K/|W| and |P| of a state, in f64, W pair by pair.
fn energies(state: &[(f64, [f64; 3], [f64; 3])], eps: f64) -> (f64, f64, f64, f64) {
    let mut k = 0.0;
    let mut p = [0.0; 3];
    let mut w = 0.0;
    for (i, (mi, xi, vi)) in state.iter().enumerate() {
        k += 0.5 * mi * (vi[0] * vi[0] + vi[1] * vi[1] + vi[2] * vi[2]);
        for c in 0..3 {
            p[c] += mi * vi[c];
        }
        for (mj, xj, _) in &state[i + 1..] {
            let d = [xj[0] - xi[0], xj[1] - xi[1], xj[2] - xi[2]];
            w -= mi * mj / (d[0] * d[0] + d[1] * d[1] + d[2] * d[2] + eps * eps).sqrt();
        }
    }
    let momentum = (p[0] * p[0] + p[1] * p[1] + p[2] * p[2]).sqrt();
    (k, w, -2.0 * k / w, momentum)
}

/// Runs `solver` on a Plummer sphere of 512 to t = 1/8, writes the state as
/// CSV and returns the read-out and the file's text.
fn run_and_write(solver: SolverKind, precision: Precision) -> (Readout, String, f64) {
    run_n_and_write(solver, precision, 512, 0.125)
}

fn run_n_and_write(
    solver: SolverKind,
    precision: Precision,
    n: usize,
    t_end: f64,
) -> (Readout, String, f64) {
    let ctx = common::gpu();
    let params = RunParams {
        solver,
        precision,
        eps: 0.01,
        dt: 1.0 / 64.0,
        ..RunParams::default()
    };
    let p = Model::Plummer.generate(n, 9).unwrap();
    let mut run = block_on(Run::new(&ctx, &p, 0.0, params.validate().unwrap())).unwrap();
    block_on(run.run_to(&ctx, t_end, |_, _| true)).unwrap();
    let r = block_on(run.readout(&ctx)).unwrap();
    let dir = std::env::temp_dir().join(format!("webgrav-energy-{}", solver.name()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("state.csv");
    write_state(path.to_str().unwrap(), &r.snapshot, r.state_f64.as_ref()).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    // The run's softening, as it holds it.
    (r, text, params.eps as f64)
}

fn rel(a: f64, b: f64) -> f64 {
    ((a - b) / b).abs()
}

/// The report against the recomputation from `state`.
fn check_report(r: &Readout, state: &[(f64, [f64; 3], [f64; 3])], eps: f64, tol: f64) {
    let (k, w, q, momentum) = energies(state, eps);
    let d = &r.diagnostics;
    assert!(rel(d.kinetic, k) <= tol, "K {} vs {k}", d.kinetic);
    assert!(rel(d.potential, w) <= tol, "W {} vs {w}", d.potential);
    assert!(rel(d.total, k + w) <= tol, "E {} vs {}", d.total, k + w);
    assert!(rel(d.virial_ratio, q) <= tol, "Q {} vs {q}", d.virial_ratio);
    let p = d.momentum;
    let reported = (p[0] * p[0] + p[1] * p[1] + p[2] * p[2]).sqrt();
    // |P| is a cancellation: compare on the scale of Σ m|v| ~ 0.7.
    assert!(
        (reported - momentum).abs() <= tol,
        "|P| {reported} vs {momentum}"
    );
}

/// Hermite holds its state in f64 and writes it so: the report agrees with
/// the file to 1e-12 (the double-single potential it reported before was
/// off by ~1e-9 in E).
fn check_hermite(solver: SolverKind) {
    let (r, text, eps) = run_and_write(solver, Precision::Ds);
    assert_eq!(r.potential_sum, PotentialSum::HostF64);
    check_report(&r, &read_csv::<f64>(&text), eps, 1e-12);
}

/// A leapfrog's state is f32: read as f32, the file is that state exactly,
/// and the report agrees with it to 1e-12 (its solver's f32 potential, or
/// the tree's approximate one, was off by 1e-7 or 1e-4); read as decimals,
/// to the f32 state's precision.
fn check_leapfrog(solver: SolverKind) {
    let (r, text, eps) = run_and_write(solver, Precision::Ds);
    assert_eq!(r.potential_sum, PotentialSum::HostF64);
    check_report(&r, &read_csv::<f32>(&text), eps, 1e-12);
    check_report(&r, &read_csv::<f64>(&text), eps, 1e-6);
}

#[test]
fn hermite4_reports_the_energy_of_its_written_state() {
    check_hermite(SolverKind::Hermite4);
}

#[test]
fn hermite6_reports_the_energy_of_its_written_state() {
    check_hermite(SolverKind::Hermite6);
}

#[test]
fn direct_leapfrog_reports_the_energy_of_its_written_state() {
    check_leapfrog(SolverKind::Direct);
}

#[test]
fn tree_leapfrog_reports_the_energy_of_its_written_state() {
    check_leapfrog(SolverKind::Tree);
}

// Above the host's bound (4096) the run sums on the GPU in double-single,
// says so, and still reports the written state's energy to 1e-12.
#[test]
fn large_runs_sum_the_energy_on_the_gpu() {
    let (r, text, eps) = run_n_and_write(SolverKind::Direct, Precision::Ds, 4100, 1.0 / 64.0);
    assert_eq!(r.potential_sum, PotentialSum::GpuDoubleSingle);
    check_report(&r, &read_csv::<f32>(&text), eps, 1e-12);
}

// The GPU kernel of large N: every potential within 2e-13 of the f64 sum,
// for a system at the origin and one off it (positions need all of
// double-single there), with and without softening; W to 1e-14. (A pair
// closer than the state's position precision allows would be off by more:
// double-single positions carry 48 bits, f64 53.) Also where the sources
// come in several runs, one a dispatch (a GPU's budget at large N: here a
// budget of two and a half tiles of sources against every sink, so runs
// of two tiles, three of them, the last short).
#[test]
fn double_single_potentials_match_the_f64_sum() {
    let whole = common::gpu();
    let mut split = whole.clone();
    split.interactions_per_submission = 8.0 * 700.0 * 128.0 * 2.5;
    // And a budget far beyond the sources (few particles, a fast GPU).
    let mut unbounded = whole.clone();
    unbounded.interactions_per_submission = 1e30;
    for ctx in [whole, split, unbounded] {
        potentials_match_the_f64_sum(&ctx);
    }
}

fn potentials_match_the_f64_sum(ctx: &webgrav::gpu::GpuContext) {
    let p = Model::Plummer.generate(700, 4).unwrap();
    let mass: Vec<f64> = (0..p.len())
        .map(|k| (1.0 + (k % 7) as f64) / 2800.0)
        .collect();
    let kernel = PotentialKernel::new(&ctx.device);
    for offset in [0.0, 5.0] {
        let pos: Vec<[f64; 3]> = p
            .pos_mass
            .iter()
            .map(|q| q.pos.map(|c| c as f64 * (1.0 + 1e-9) + offset))
            .collect();
        for eps in [0.0, 1e-3] {
            let reference = potentials_f64(&mass, &pos, eps);
            let gpu = block_on(kernel.potentials(ctx, &mass, &pos, eps)).unwrap();
            let worst = gpu
                .iter()
                .zip(&reference)
                .map(|(g, r)| rel(*g, *r))
                .fold(0.0, f64::max);
            let w = |phi: &[f64]| phi.iter().zip(&mass).map(|(f, m)| f * m).sum::<f64>();
            let dw = rel(w(&gpu), w(&reference));
            assert!(
                worst <= 2e-13,
                "offset {offset} eps {eps}: worst relative error {worst:e}"
            );
            assert!(dw <= 1e-14, "offset {offset} eps {eps}: W off by {dw:e}");
            // A run of sinks among all the sources (a rank's own particles
            // in a parallel report): those sinks' potentials, bit for bit
            // and on the host as well.
            for sinks in [0..129, 300..301, 571..700] {
                let part =
                    block_on(kernel.potentials_of(ctx, &mass, &pos, eps, sinks.clone())).unwrap();
                assert_eq!(part, gpu[sinks.clone()], "{sinks:?}");
                let host = potentials_f64_of(&mass, &pos, eps, sinks.clone());
                assert_eq!(host, reference[sinks.clone()], "{sinks:?}");
            }
        }
    }
}

// Issue 47 item 3: a tree run above the host's bound reports the tree's
// own potential (a double-single N² sum would cost hundreds of its steps,
// minutes on a software adapter), says so, and that W is the f64 sum's to
// the tree's accuracy. Its read-out costs a few of its steps, not more.
#[test]
fn tree_runs_report_the_trees_potential_at_a_bounded_cost() {
    let ctx = common::gpu();
    let n = 16384;
    let params = RunParams {
        solver: SolverKind::Tree,
        eps: 0.01,
        dt: 1.0 / 64.0,
        ..RunParams::default()
    };
    let p = Model::Plummer.generate(n, 9).unwrap();
    let mut run = block_on(Run::new(&ctx, &p, 0.0, params.validate().unwrap())).unwrap();
    let r = block_on(run.readout(&ctx)).unwrap();
    assert_eq!(r.potential_sum, PotentialSum::Solver);
    // W against the f64 sum of the same state (on a sample's worth of
    // cost: the f64 potentials of every particle, once).
    let mass: Vec<f64> = r
        .snapshot
        .particles
        .pos_mass
        .iter()
        .map(|q| q.mass as f64)
        .collect();
    let pos: Vec<[f64; 3]> = r
        .snapshot
        .particles
        .pos_mass
        .iter()
        .map(|q| q.pos.map(f64::from))
        .collect();
    let phi = potentials_f64(&mass, &pos, 0.01);
    let w: f64 = 0.5 * phi.iter().zip(&mass).map(|(f, m)| f * m).sum::<f64>();
    let dw = rel(r.diagnostics.potential, w);
    assert!(dw < 1e-3, "W off by {dw:e}");
    // A step, then a read-out of its state: timed alike (both end with the
    // GPU idle), the read-out within a few steps' cost (it was an N² sum:
    // some 100 steps here on a software adapter).
    let time = |f: &mut dyn FnMut()| {
        let t = std::time::Instant::now();
        f();
        t.elapsed().as_secs_f64()
    };
    let step = time(&mut || {
        block_on(run.run_to(&ctx, 1.0 / 64.0, |_, _| true)).unwrap();
    });
    let readout = time(&mut || {
        block_on(run.readout(&ctx)).unwrap();
    });
    assert!(
        readout < 10.0 * step + 0.5,
        "read-out {readout:.3} s, a step {step:.3} s"
    );
}

// The energy reference summed on the GPU (`Run::energy_reference`, the
// CLI's start when nothing is written of the start state) is the
// read-out's diagnostics of the same state to f32's rounding of each
// particle's terms, which averages out over the particles: ~3e-8/√N
// relative (4.7e-10 here, on lavapipe); 1e-8 is twenty times that, and a
// lost term or a wrong lane would be off by 1e-4 or more. It sets E₀ as a first read-out would: a read-out after
// steps reports its error against it, and the reference stays where one
// is set. `Run::measure` gives a read-out's figures without the state. Where the energy needs the state on the host (N within the
// precise sum's bound, or Hermite), it declines and sets nothing.
#[test]
fn the_energy_reference_summed_on_the_gpu_is_the_read_outs() {
    let ctx = common::gpu();
    let n = 6000;
    let params = RunParams {
        solver: SolverKind::Tree,
        eps: 0.01,
        dt: 1.0 / 64.0,
        alpha: 0.01,
        ..RunParams::default()
    };
    let config = params.validate().unwrap();
    let p = Model::Plummer.generate(n, 9).unwrap();
    let mut read = block_on(Run::new(&ctx, &p, 0.0, config)).unwrap();
    let mut summed = block_on(Run::new(&ctx, &p, 0.0, config)).unwrap();
    let host = block_on(read.readout(&ctx)).unwrap().diagnostics;
    let gpu = block_on(summed.energy_reference(&ctx)).unwrap().unwrap();
    let close = |a: f64, b: f64, scale: f64, what: &str| {
        assert!((a - b).abs() <= 1e-8 * scale, "{what}: {a:e} against {b:e}");
    };
    println!(
        "E on the GPU {:.15} against the read-out's {:.15}",
        gpu.total, host.total
    );
    close(gpu.kinetic, host.kinetic, host.kinetic, "K");
    close(gpu.potential, host.potential, host.potential.abs(), "W");
    close(gpu.total, host.total, host.total.abs(), "E");
    close(gpu.virial_ratio, host.virial_ratio, 1.0, "Q");
    // Momenta sum to ~0: compared against the scale of their terms.
    let (speed, radius) = (host.kinetic.sqrt(), 1.0);
    for a in 0..3 {
        close(gpu.momentum[a], host.momentum[a], speed, "p");
        close(
            gpu.angular_momentum[a],
            host.angular_momentum[a],
            speed * radius,
            "L",
        );
        close(
            gpu.center_of_mass[a],
            host.center_of_mass[a],
            radius,
            "centre of mass",
        );
    }
    assert_ne!(gpu.total, 0.0);
    // Steps, then a read-out: its error is against the GPU's E₀, the same
    // error as the run that read its start to 1e-8.
    for run in [&mut read, &mut summed] {
        block_on(run.run_to(&ctx, 4.0 / 64.0, |_, _| true)).unwrap();
    }
    let (a, b) = (
        block_on(read.readout(&ctx)).unwrap(),
        block_on(summed.readout(&ctx)).unwrap(),
    );
    assert_eq!(a.snapshot, b.snapshot);
    assert_eq!(b.e0, gpu);
    assert!(!b.e0_reset);
    assert!(a.energy_error() > 0.0);
    close(b.energy_error(), a.energy_error(), 1.0, "|dE/E0|");
    // Measured on the GPU after more steps: the read-out's figures but
    // the state, which stays on the GPU (the last good state is the last
    // read-out's).
    for run in [&mut read, &mut summed] {
        block_on(run.run_to(&ctx, 6.0 / 64.0, |_, _| true)).unwrap();
    }
    let m = block_on(summed.measure(&ctx)).unwrap().unwrap();
    let r = block_on(read.readout(&ctx)).unwrap().measured();
    assert_eq!((m.time, m.steps, m.n), (r.time, r.steps, n));
    assert_eq!(m.interactions, r.interactions);
    assert!(m.interactions.is_some_and(|(pp, pc)| pp > 0.0 && pc > 0.0));
    assert_eq!(m.e0, gpu);
    close(
        m.diagnostics.total,
        r.diagnostics.total,
        r.diagnostics.total.abs(),
        "E",
    );
    close(m.energy_error(), r.energy_error(), 1.0, "|dE/E0|");
    assert_eq!(summed.last_good().unwrap().time, 4.0 / 64.0);
    // A reference once set stays.
    assert_eq!(
        block_on(summed.energy_reference(&ctx)).unwrap().unwrap(),
        gpu
    );
    // Within the precise sum's bound, and for Hermite, the state is needed.
    let small = Model::Plummer.generate(1000, 9).unwrap();
    for solver in [SolverKind::Tree, SolverKind::Hermite4] {
        let config = RunParams { solver, ..params }.validate().unwrap();
        let mut run = block_on(Run::new(&ctx, &small, 0.0, config)).unwrap();
        assert_eq!(block_on(run.energy_reference(&ctx)).unwrap(), None);
        assert!(block_on(run.readout(&ctx)).unwrap().e0_reset);
    }
}

// `webgrav forces` reports no energy: its read-outs sum none, whatever N
// and solver (Hermite's precise sum included).
#[test]
fn read_outs_for_forces_sum_no_energy() {
    let ctx = common::gpu();
    let p = Model::Plummer.generate(512, 9).unwrap();
    for solver in [SolverKind::Tree, SolverKind::Hermite4] {
        let params = RunParams {
            solver,
            ..RunParams::default()
        };
        let mut run = block_on(Run::new(&ctx, &p, 0.0, params.validate().unwrap())).unwrap();
        run.set_potential_rule(PotentialRule::Solver);
        let r = block_on(run.readout(&ctx)).unwrap();
        assert_eq!(r.potential_sum, PotentialSum::Solver, "{}", solver.name());
        assert!(r.diagnostics.potential < 0.0, "{}", solver.name());
    }
}

// `--potential-sum exact`: a tree run above the host's bound sums its
// state's potential precisely (on the GPU) when asked, so that runs whose
// trees differ (one GPU and several, two θ) compare by their states'
// energies; back to `auto`, the same state's report is the tree's again.
#[test]
fn tree_runs_sum_the_exact_potential_when_asked() {
    let ctx = common::gpu();
    let params = RunParams {
        solver: SolverKind::Tree,
        eps: 0.01,
        ..RunParams::default()
    };
    let p = Model::Plummer.generate(4500, 3).unwrap();
    let mut run = block_on(Run::new(&ctx, &p, 0.0, params.validate().unwrap())).unwrap();
    run.set_potential_rule(PotentialRule::Exact);
    let exact = block_on(run.readout(&ctx)).unwrap();
    assert_eq!(exact.potential_sum, PotentialSum::GpuDoubleSingle);
    let q = &exact.snapshot.particles.pos_mass;
    let mass: Vec<f64> = q.iter().map(|q| q.mass as f64).collect();
    let pos: Vec<[f64; 3]> = q.iter().map(|q| q.pos.map(f64::from)).collect();
    // (The run's ε is an f32.)
    let phi = potentials_f64(&mass, &pos, 0.01f32 as f64);
    let w: f64 = 0.5 * phi.iter().zip(&mass).map(|(f, m)| f * m).sum::<f64>();
    let dw = rel(exact.diagnostics.potential, w);
    assert!(dw < 1e-13, "W off by {dw:e}");
    run.set_potential_rule(PotentialRule::Auto);
    let auto = block_on(run.readout(&ctx)).unwrap();
    assert_eq!(auto.potential_sum, PotentialSum::Solver);
    assert_ne!(auto.diagnostics.potential, exact.diagnostics.potential);
}
