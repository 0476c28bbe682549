//! Galaxy models evolved on the GPU: an isolated disk galaxy run with
//! direct forces for one rotation at 2.5 scale lengths keeps its size, its
//! rotation and (to the tree's accuracy) its energy: the equilibrium the
//! generator builds is one the integrator holds; two small galaxies on a
//! parabolic orbit merge into one. Small N for lavapipe.
#![cfg(not(target_arch = "wasm32"))]

mod common;

use pollster::block_on;
use webgrav::app::analysis;
use webgrav::run::{Run, RunParams, SolverKind};
use webgrav::state::galaxy::RealizeOnCpu;
use webgrav::state::galaxy::{
    Component, DiskEquilibrium, Galaxy, Merger, Orbit, Shape, SphericalGalaxy, Spin,
};
use webgrav::state::Tagged;

/// Median cylindrical radius, median |z| and mean v_φ (about the disk's
/// centre of mass) of the particles tagged `tag`.
fn disk_shape(t: &Tagged, tag: u32) -> (f64, f64, f64) {
    let p = &t.particles;
    let idx: Vec<usize> = (0..p.len()).filter(|&k| t.tags[k] == tag).collect();
    let mass: f64 = idx.iter().map(|&k| p.pos_mass[k].mass as f64).sum();
    let c: [f64; 3] = std::array::from_fn(|a| {
        idx.iter()
            .map(|&k| p.pos_mass[k].mass as f64 * p.pos_mass[k].pos[a] as f64)
            .sum::<f64>()
            / mass
    });
    let (mut r, mut z, mut vphi) = (vec![], vec![], 0.0);
    for &k in &idx {
        let x = p.pos_mass[k].pos.map(f64::from);
        let v = p.vel[k].vel.map(f64::from);
        let (dx, dy) = (x[0] - c[0], x[1] - c[1]);
        let rr = dx.hypot(dy);
        r.push(rr);
        z.push((x[2] - c[2]).abs());
        vphi += (dx * v[1] - dy * v[0]) / rr / idx.len() as f64;
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    (median(&mut r), median(&mut z), vphi)
}

/// A leapfrog run of `p` with direct forces (lavapipe runs the tree's many
/// passes slowly), ε = 0.05.
fn direct_run(ctx: &webgrav::gpu::GpuContext, p: &webgrav::state::Particles, dt: f64) -> Run {
    let params = RunParams {
        solver: SolverKind::Direct,
        eps: 0.05,
        dt,
        ..RunParams::default()
    };
    block_on(Run::new(ctx, p, 0.0, params.validate().unwrap())).unwrap()
}

#[test]
fn isolated_disk_galaxy_keeps_its_shape_for_a_rotation() {
    let ctx = common::gpu();
    // ~650 disk particles.
    let g = common::small_disk_galaxy();
    let start: Tagged = g.realize(2000, 1).unwrap().into();
    let disk = start.components.iter().position(|c| c == "disk").unwrap() as u32;
    // One rotation period at 2.5 R_d.
    let vc = DiskEquilibrium::new(&g).kinematics(2.5).circular_speed;
    let period = 2.0 * std::f64::consts::PI * 2.5 / vc;
    let mut run = direct_run(&ctx, &start.particles, 1.0 / 32.0);
    let first = block_on(run.readout(&ctx)).unwrap();
    block_on(run.run_to(&ctx, period, |_, _| true)).unwrap();
    let last = block_on(run.readout(&ctx)).unwrap();
    let end = Tagged {
        particles: last.snapshot.particles.clone(),
        ..start.clone()
    };
    let (r0, z0, v0) = disk_shape(&start, disk);
    let (r1, z1, v1) = disk_shape(&end, disk);
    println!(
        "T = {period:.2}: disk half-mass radius {r0:.3} → {r1:.3}, median |z| {z0:.3} → {z1:.3}, \
         mean v_φ {v0:.3} → {v1:.3}; virial ratio {:.3} → {:.3}, |ΔE/E| {:.1e}",
        first.diagnostics.virial_ratio,
        last.diagnostics.virial_ratio,
        last.energy_error()
    );
    // Measured (lavapipe, seed 1): half-mass radius 1.639 → 1.696,
    // median |z| 0.058 → 0.145, v̄_φ 0.529 → 0.446, virial ratio 1.008 →
    // 1.020, |ΔE/E| 2e-5.
    //
    // The radial structure holds: over seeds 1–16 the half-mass radius of
    // ~650 disk particles changes by +4 % ± 7 % in the rotation (the
    // same with the sequential generator before the per-particle
    // streams), and a disk out of equilibrium expands or contracts by
    // tens of per cent.
    assert!((r1 / r0 - 1.0).abs() < 0.15);
    // The whole galaxy stays in virial equilibrium and conserves energy.
    assert!((last.diagnostics.virial_ratio - 1.0).abs() < 0.05);
    assert!(last.energy_error() < 1e-4);
    // At N = 2000 a particle's G m / σ_z² (0.17) exceeds z₀: two-body
    // heating thickens the disk about threefold in a rotation (the same
    // with ε = 0.02, so it is not the softening) and, heating it radially
    // too, raises the asymmetric drift. Bounded here; holding z₀ needs
    // ~10⁵ disk particles, beyond lavapipe.
    assert!(z1 < 4.0 * z0);
    assert!(v1 > 0.75 * v0);
}

/// Density centre of the particles whose component name starts with
/// `galaxy` ("primary" or "secondary").
fn galaxy_center(t: &Tagged, particles: &webgrav::state::Particles, galaxy: &str) -> [f64; 3] {
    let p = analysis::select(particles, |k| {
        t.components[t.tags[k] as usize].starts_with(galaxy)
    });
    analysis::density_center(&p.pos_mass)
}

fn distance(a: [f64; 3], b: [f64; 3]) -> f64 {
    (0..3).map(|k| (a[k] - b[k]).powi(2)).sum::<f64>().sqrt()
}

#[test]
fn two_small_galaxies_merge_and_conserve_energy() {
    let ctx = common::gpu();
    // Two Hernquist spheres (a = 0.25, truncated at 2.5) with central black
    // holes, mass ratio 1:2, falling in on a parabolic orbit with
    // pericentre 0.25 from 3 apart: first passage at t ≈ 2, and dynamical
    // friction merges them within a few more crossings.
    let galaxy = |mass: f64| {
        Galaxy::Spherical(SphericalGalaxy {
            components: vec![
                Component::truncated(
                    "stars",
                    mass,
                    Shape::Hernquist {
                        a: 0.25 * mass.cbrt(),
                    },
                    2.5 * mass.cbrt(),
                ),
                Component::black_hole(0.01 * mass),
            ],
        })
    };
    let merger = Merger {
        primary: galaxy(1.0),
        secondary: galaxy(0.5),
        orbit: Orbit {
            pericenter: 0.25,
            eccentricity: 1.0,
            separation: 3.0,
        },
        primary_spin: Spin::default(),
        secondary_spin: Spin::default(),
        primary_share: 2.0 / 3.0,
    };
    let start: Tagged = merger.realize(1536, 5).unwrap().into();
    let mut run = direct_run(&ctx, &start.particles, 1.0 / 64.0);
    let mut separations = vec![];
    for t in [0.0, 2.0, 6.0, 12.0] {
        block_on(run.run_to(&ctx, t, |_, _| true)).unwrap();
        let r = block_on(run.readout(&ctx)).unwrap();
        let p = &r.snapshot.particles;
        let d = distance(
            galaxy_center(&start, p, "primary"),
            galaxy_center(&start, p, "secondary"),
        );
        separations.push((t, d, r.energy_error()));
    }
    println!("t, centre separation, |ΔE/E|: {separations:?}");
    let (_, d0, _) = separations[0];
    let (_, d_end, de_end) = separations[3];
    // Measured (lavapipe, seed 5): separations 3.02, 0.62 (first
    // passage), 1.50 (apocentre), 0.079 (merged); |ΔE/E| 8e-4 after the
    // first passage (relative speed ~3.5: dt v ~ ε), then flat at 7e-4.
    assert!((d0 - 3.0).abs() < 0.1, "the galaxies start 3 apart: {d0}");
    assert!(
        separations[2].1 > separations[1].1,
        "the secondary comes out again after its first passage: {separations:?}"
    );
    // Merged: one centre, to within the noise of shrinking spheres on
    // ~500 particles (~0.05) and well inside the scale length 0.25.
    assert!(d_end < 0.15, "the centres are {d_end} apart at the end");
    assert!(de_end < 2e-3, "|ΔE/E| = {de_end}");
}
