//! Pipelines are built once per device (`gpu::kernel_cache`): a second
//! run on one device (the page's next model, a parallel run's redrawn
//! domains) builds none (and spends no time building), computes the same
//! forces, and a dropped device is forgotten with its last context.
#![cfg(not(target_arch = "wasm32"))]

mod common;

use webgrav::gpu::kernel_cache;
use webgrav::run::{Run, RunParams, SolverKind};
use webgrav::state::Model;

#[test]
fn a_second_run_builds_no_pipeline_and_a_dropped_device_is_forgotten() {
    let ctx = common::gpu();
    let device = ctx.device.clone();
    assert_eq!(kernel_cache::held(&device), (0, 0));
    let particles = Model::Plummer.generate(3000, 4).unwrap();
    let config = tree_config();
    // Positions and forces.
    let state = |run: &mut Run| {
        let r = pollster::block_on(run.readout(&ctx)).unwrap();
        (r.snapshot.particles.pos_mass.clone(), r.acc_pot)
    };
    let clock = std::time::Instant::now();
    let building = kernel_cache::build_ms();
    let mut first = pollster::block_on(Run::new(&ctx, &particles, 0.0, config)).unwrap();
    let first_s = clock.elapsed().as_secs_f64();
    // The builds' time is counted (what `bench frame` reports as
    // compile_ms), within the set-up's.
    let build_s = (kernel_cache::build_ms() - building) / 1e3;
    assert!(
        build_s > 0.0 && build_s <= first_s,
        "{build_s} of {first_s} s"
    );
    let built = kernel_cache::held(&device);
    // The tree's kernels: keys, sort, build, properties, groups, walk, …
    assert!(built.0 >= 8 && built.1 >= 15, "{built:?}");
    let clock = std::time::Instant::now();
    let building = kernel_cache::build_ms();
    let mut second = pollster::block_on(Run::new(&ctx, &particles, 0.0, config)).unwrap();
    let second_s = clock.elapsed().as_secs_f64();
    assert_eq!(kernel_cache::build_ms(), building, "no time building");
    println!(
        "set-up {first_s:.3} s, then {second_s:.3} s with {built:?} modules and pipelines held"
    );
    assert_eq!(kernel_cache::held(&device), built, "nothing built again");
    // Shared pipelines, separate buffers: the same forces, and a step of
    // one leaves the other where it was.
    pollster::block_on(first.run_to(&ctx, 0.125, |_, _| true)).unwrap();
    let (a, b) = (state(&mut first), state(&mut second));
    assert_ne!(a.0, b.0);
    let mut third = pollster::block_on(Run::new(&ctx, &particles, 0.0, config)).unwrap();
    pollster::block_on(third.run_to(&ctx, 0.125, |_, _| true)).unwrap();
    assert_eq!(state(&mut third), a);
    drop((first, second, third));
    // Clones share the device's entries (now also the read-outs'
    // kernels); the last one forgets them.
    let held = kernel_cache::held(&device);
    assert!(held.1 > built.1, "{held:?}");
    let clone = ctx.clone();
    drop(ctx);
    assert_eq!(kernel_cache::held(&device), held);
    drop(clone);
    assert_eq!(kernel_cache::held(&device), (0, 0));
}

fn tree_config() -> webgrav::run::RunConfig {
    RunParams {
        solver: SolverKind::Tree,
        ..RunParams::default()
    }
    .validate()
    .unwrap()
}
