//! The GPU direct kernel against the CPU f64 sum on a Plummer model.
#![cfg(not(target_arch = "wasm32"))]

mod common;

use webgrav::direct::reference::{acc_errors, forces, pot_errors, ErrorStats};
use webgrav::direct::DirectSolver;
use webgrav::sim::{GpuParticles, Model};

fn gpu_forces(n: usize, eps: f32) -> (ErrorStats, ErrorStats) {
    let ctx = common::gpu();
    let p = Model::Plummer.generate(n, 7).unwrap();
    let state = GpuParticles::upload(&ctx, &p).unwrap();
    let solver = DirectSolver::new(&ctx.device, &state, eps);
    let mut encoder = ctx.device.create_command_encoder(&Default::default());
    solver.encode(&ctx.device, &mut encoder, None);
    ctx.queue.submit(Some(encoder.finish()));
    let gpu = pollster::block_on(state.read_acc_pot(&ctx)).unwrap();
    let reference = forces(&p.pos_mass, eps as f64);
    let acc = ErrorStats::of(&acc_errors(&gpu, &reference));
    let pot = ErrorStats::of(&pot_errors(&gpu, &reference));
    eprintln!("N = {n}, eps = {eps}: acc {acc:?}\n pot {pot:?}");
    (acc, pot)
}

// An f32 sum of N terms carries a relative rounding error of order
// sqrt(N)·2^-24 ≈ 3e-6 for N = 2048 (random-walk accumulation), more where
// terms cancel (|a| small near the centre). Measured on lavapipe: median
// 5e-7, max 2e-6 (acc and pot). The bounds leave a factor ~4-10 for other
// GPUs' rounding and sit far below any real bug (a wrong softening, a
// missed tile or a double-counted pair gives errors >= 1e-3).
#[test]
fn direct_matches_f64_softened() {
    let (acc, pot) = gpu_forces(2048, 0.01);
    assert!(acc.median < 2e-6, "median acc error {}", acc.median);
    assert!(acc.max < 2e-5, "max acc error {}", acc.max);
    assert!(pot.median < 2e-6, "median pot error {}", pot.median);
    assert!(pot.max < 1e-5, "max pot error {}", pot.max);
}

// A size that is not a multiple of the tile, so the zero-mass padding of
// the last tile is exercised; unsoftened, so the self pair must be skipped.
#[test]
fn direct_matches_f64_unsoftened_partial_tile() {
    let (acc, pot) = gpu_forces(1000, 0.0);
    assert!(acc.median < 2e-6, "median acc error {}", acc.median);
    assert!(acc.max < 2e-5, "max acc error {}", acc.max);
    assert!(pot.median < 2e-6, "median pot error {}", pot.median);
    assert!(pot.max < 1e-5, "max pot error {}", pot.max);
}

// Every kernel shape the benchmark can select (sinks per invocation 1-16,
// 32-256 invocations, 1-4 sources per loop trip) computes the same forces:
// same bounds as above, on a size that leaves the last workgroup partly
// empty for all of them.
#[test]
fn direct_kernel_shapes_match_f64() {
    use webgrav::direct::DirectConfig;
    let ctx = common::gpu();
    let p = Model::Plummer.generate(1000, 3).unwrap();
    let state = GpuParticles::upload(&ctx, &p).unwrap();
    let reference = forces(&p.pos_mass, 0.01);
    for (threads, i_per_thread, unroll) in [
        (64, 1, 1),
        (128, 2, 2),
        (256, 3, 4),
        (64, 8, 4),
        (32, 16, 2),
    ] {
        let shape = DirectConfig {
            threads,
            i_per_thread,
            unroll,
        };
        let solver = DirectSolver::with_config(&ctx.device, &state, 0.01, shape);
        let mut encoder = ctx.device.create_command_encoder(&Default::default());
        solver.encode(&ctx.device, &mut encoder, None);
        ctx.queue.submit(Some(encoder.finish()));
        let gpu = pollster::block_on(state.read_acc_pot(&ctx)).unwrap();
        let acc = ErrorStats::of(&acc_errors(&gpu, &reference));
        let pot = ErrorStats::of(&pot_errors(&gpu, &reference));
        assert!(acc.max < 2e-5, "{shape:?}: acc {acc:?}");
        assert!(pot.max < 1e-5, "{shape:?}: pot {pot:?}");
    }
}
