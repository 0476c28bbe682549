//! The same kernels in a real browser (headless Chromium, WebGPU on
//! SwiftShader), checked against the same f64 reference and the same bounds
//! as the native tests (tests/direct_forces.rs, tests/conservation.rs), so
//! browser and native results agree to f32 rounding.
#![cfg(target_arch = "wasm32")]

use wasm_bindgen_test::*;
use webgrav::direct::reference::{acc_errors, forces, pot_errors, ErrorStats};
use webgrav::direct::DirectSolver;
use webgrav::gpu::GpuContext;
use webgrav::sim::{GpuParticles, Model, SimConfig, Simulation, SolverKind};

wasm_bindgen_test_configure!(run_in_browser);

async fn gpu() -> GpuContext {
    GpuContext::headless()
        .await
        .expect("WebGPU adapter in the browser")
}

#[wasm_bindgen_test]
async fn direct_kernel_matches_f64_in_browser() {
    let ctx = gpu().await;
    let p = Model::Plummer.generate(2048, 7).unwrap();
    let state = GpuParticles::upload(&ctx, &p).unwrap();
    let solver = DirectSolver::new(&ctx.device, &state, 0.01);
    let mut encoder = ctx.device.create_command_encoder(&Default::default());
    solver.encode(&ctx.device, &mut encoder, None);
    ctx.queue.submit(Some(encoder.finish()));
    let gpu = state.read_acc_pot(&ctx).await.unwrap();
    let reference = forces(&p.pos_mass, 0.01);
    let acc = ErrorStats::of(&acc_errors(&gpu, &reference));
    let pot = ErrorStats::of(&pot_errors(&gpu, &reference));
    web_sys::console::log_1(
        &format!(
            "browser ({}): acc {acc:?} pot {pot:?}",
            ctx.adapter_summary()
        )
        .into(),
    );
    // Same bounds as tests/direct_forces.rs (see the reasoning there).
    assert!(acc.median < 2e-6, "median acc error {}", acc.median);
    assert!(acc.max < 2e-5, "max acc error {}", acc.max);
    assert!(pot.median < 2e-6, "median pot error {}", pot.median);
    assert!(pot.max < 1e-5, "max pot error {}", pot.max);
}

#[wasm_bindgen_test]
async fn leapfrog_conserves_energy_in_browser() {
    let ctx = gpu().await;
    let p = Model::Plummer.generate(512, 3).unwrap();
    let config = SimConfig {
        solver: SolverKind::Direct,
        eps: 0.05,
        dt: 1.0 / 256.0,
        theta: 0.5,
    };
    let mut sim = Simulation::new(&ctx, &p, config, 0.0).unwrap();
    let e0 = sim.diagnostics(&ctx).await.unwrap();
    sim.step(&ctx, 64);
    let e1 = sim.diagnostics(&ctx).await.unwrap();
    let err = e1.energy_error(&e0);
    web_sys::console::log_1(&format!("browser leapfrog: |dE/E| = {err:e}").into());
    // As tests/conservation.rs: O(dt²) leapfrog error is ~1e-6 here.
    assert!(err < 5e-6, "energy error {err}");
    assert!((sim.time - 0.25).abs() < 1e-12);
}

#[wasm_bindgen_test]
async fn tree_solver_matches_f64_in_browser() {
    use webgrav::tree::{TreeConfig, TreeSolver};
    let ctx = gpu().await;
    let p = Model::Plummer.generate(4096, 9).unwrap();
    let state = GpuParticles::upload(&ctx, &p).unwrap();
    let tree = TreeSolver::new(
        &ctx,
        &state,
        TreeConfig {
            theta: 0.5,
            eps: 0.01,
        },
    )
    .unwrap();
    let mut encoder = ctx.device.create_command_encoder(&Default::default());
    tree.encode(&ctx.device, &mut encoder, None);
    ctx.queue.submit(Some(encoder.finish()));
    let s = state.read(&ctx).await.unwrap();
    let reference = forces(&p.pos_mass, 0.01);
    let reference: Vec<_> = s.index.iter().map(|&i| reference[i as usize]).collect();
    let acc = ErrorStats::of(&acc_errors(&s.acc_pot, &reference));
    web_sys::console::log_1(&format!("browser tree θ=0.5: {acc:?}").into());
    // Same bounds as tests/tree.rs at θ = 0.5: the browser runs the same
    // WGSL, so its error distribution must match the native one.
    assert!(acc.median < 3e-4, "median {}", acc.median);
    assert!(acc.p99 < 3e-3, "p99 {}", acc.p99);
    assert!(acc.max < 0.1, "max {}", acc.max);
}
