//! The GPU direct kernel against the CPU f64 sum on a Plummer model.
#![cfg(not(target_arch = "wasm32"))]

mod common;

use webgrav::direct::reference::{acc_errors, forces, pot_errors, ErrorStats};
use webgrav::direct::DirectSolver;
use webgrav::state::{GpuParticles, Model};

fn gpu_forces(n: usize, eps: f32) -> (ErrorStats, ErrorStats) {
    let ctx = common::gpu();
    let (acc, pot) = pollster::block_on(common::cases::direct_errors(&ctx, n, eps));
    eprintln!("N = {n}, eps = {eps}: acc {acc:?}\n pot {pot:?}");
    (acc, pot)
}

// Bounds and why: `common::cases::DIRECT_*` (shared with the browser test).
#[test]
fn direct_matches_f64_softened() {
    let (acc, pot) = gpu_forces(2048, 0.01);
    common::cases::assert_direct_bounds(&acc, &pot);
}

// A size that is not a multiple of the tile, so the zero-mass padding of
// the last tile is exercised; unsoftened, so the self pair must be skipped.
#[test]
fn direct_matches_f64_unsoftened_partial_tile() {
    let (acc, pot) = gpu_forces(1000, 0.0);
    common::cases::assert_direct_bounds(&acc, &pot);
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
        (128, 4, 8),
    ] {
        let shape = DirectConfig {
            threads,
            i_per_thread,
            unroll,
            potential: true,
        };
        let solver = DirectSolver::with_config(&ctx.device, &state, 0.01, shape, f64::INFINITY);
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

// An evaluation split into chunks that each stay within a submission
// budget (here forced below one 256-sink block's 256 000 interactions at
// N = 1000: four chunks of one block) computes exactly what one dispatch
// does, chunk by chunk in separate submissions or all in one pass.
#[test]
fn chunked_evaluation_is_bit_identical() {
    use webgrav::direct::DirectConfig;
    let ctx = common::gpu();
    let p = Model::Plummer.generate(1000, 3).unwrap();
    let shape = DirectConfig {
        threads: 64,
        i_per_thread: 4,
        unroll: 4,
        potential: true,
    };
    let run = |budget: f64, separate: bool| {
        let state = GpuParticles::upload(&ctx, &p).unwrap();
        let solver = DirectSolver::with_config(&ctx.device, &state, 0.01, shape, budget);
        if separate {
            for k in 0..solver.chunks() {
                let mut encoder = ctx.device.create_command_encoder(&Default::default());
                solver.encode_chunk(&ctx.device, &mut encoder, k, None);
                ctx.queue.submit(Some(encoder.finish()));
            }
        } else {
            let mut encoder = ctx.device.create_command_encoder(&Default::default());
            solver.encode(&ctx.device, &mut encoder, None);
            ctx.queue.submit(Some(encoder.finish()));
        }
        (
            solver.chunks(),
            pollster::block_on(state.read_acc_pot(&ctx)).unwrap(),
        )
    };
    let (one, whole) = run(f64::INFINITY, false);
    let (many, split) = run(4e4, true);
    let (_, pass) = run(4e4, false);
    assert_eq!((one, many), (1, 4));
    assert_eq!(whole, split);
    assert_eq!(whole, pass);
}

// The acceleration-only kernel: the same accelerations as the f64 sum, and
// the potentials it does not compute left as they were.
#[test]
fn acceleration_only_kernel_keeps_the_potentials() {
    use webgrav::direct::DirectConfig;
    let ctx = common::gpu();
    let p = Model::Plummer.generate(1000, 3).unwrap();
    let state = GpuParticles::upload(&ctx, &p).unwrap();
    let reference = forces(&p.pos_mass, 0.01);
    let evaluate = |potential: bool| {
        let shape = DirectConfig {
            potential,
            ..DirectConfig::default()
        };
        let solver = DirectSolver::with_config(&ctx.device, &state, 0.01, shape, f64::INFINITY);
        let mut encoder = ctx.device.create_command_encoder(&Default::default());
        solver.encode(&ctx.device, &mut encoder, None);
        ctx.queue.submit(Some(encoder.finish()));
        pollster::block_on(state.read_acc_pot(&ctx)).unwrap()
    };
    let full = evaluate(true);
    let acc_only = evaluate(false);
    let acc = ErrorStats::of(&acc_errors(&acc_only, &reference));
    assert!(acc.max < 2e-5, "acc {acc:?}");
    for (a, f) in acc_only.iter().zip(&full) {
        assert_eq!(a.pot, f.pot);
    }
}
