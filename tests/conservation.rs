//! Leapfrog runs (direct and tree forces, through `run::Run`) conserve
//! energy and momentum; the device limit on N.
#![cfg(not(target_arch = "wasm32"))]

mod common;

use common::cases::*;
use webgrav::run::SolverKind;
use webgrav::state::Model;

#[test]
fn leapfrog_conserves_energy_and_momentum() {
    let ctx = common::gpu();
    let (de, p, dl, run) =
        pollster::block_on(leapfrog_conservation(&ctx, SolverKind::Direct, 1024, 8));
    eprintln!(
        "direct leapfrog, t = {}: max |dE/E| = {de:.3e}, |P| = {p:.3e}, |dL| = {dl:.3e}",
        run.time()
    );
    assert!((run.time() - 0.5).abs() < 1e-12, "time {}", run.time());
    assert!(de < LEAPFROG_DIRECT_ENERGY, "energy error {de}");
    assert!(p < LEAPFROG_DIRECT_MOMENTUM, "momentum {p}");
    assert!(dl < LEAPFROG_DIRECT_ANGULAR, "angular momentum drift {dl}");
}

#[test]
fn too_many_particles_is_refused_before_allocation() {
    let ctx = common::gpu();
    let max = ctx.max_elements(16);
    let err = ctx.check_particle_count(max + 1, 16).unwrap_err();
    assert!(
        err.to_string().contains("exceeds this device's limit"),
        "{err}"
    );
    assert!(ctx.check_particle_count(max, 16).is_ok());
}

#[test]
fn tree_leapfrog_conserves_energy_and_ids_follow_particles() {
    let ctx = common::gpu();
    let (de, p, _, mut run) =
        pollster::block_on(leapfrog_conservation(&ctx, SolverKind::Tree, 1024, 2));
    eprintln!("tree leapfrog, t = {}: |dE/E| = {de:.3e}", run.time());
    assert!(de < LEAPFROG_TREE_ENERGY, "energy error {de}");
    assert!(p < LEAPFROG_TREE_MOMENTUM, "momentum {p}");
    // The read-out is in input order whatever order the tree keeps: ids
    // are 0..N in order, and each particle stays attached to its mass and
    // identity (its displacement over t = 0.125 is bounded by its speed,
    // v < 2 here).
    let start = Model::Plummer.generate(1024, 3).unwrap();
    let snap = pollster::block_on(run.readout(&ctx)).unwrap().snapshot;
    assert_eq!(snap.particles.id, (0..1024).collect::<Vec<u64>>());
    for (k, (a, b)) in start
        .pos_mass
        .iter()
        .zip(&snap.particles.pos_mass)
        .enumerate()
    {
        assert_eq!(a.mass, b.mass);
        let d = ((a.pos[0] - b.pos[0]).powi(2)
            + (a.pos[1] - b.pos[1]).powi(2)
            + (a.pos[2] - b.pos[2]).powi(2))
        .sqrt();
        assert!(d < 0.25, "particle {k} moved {d} in t = 0.125");
    }
}
