//! The same kernels in a real browser (headless Chromium, WebGPU on
//! SwiftShader), checked against the same f64 reference and the same bounds
//! as the native tests (tests/direct_forces.rs, tests/conservation.rs,
//! tests/hermite_kernels.rs, tests/hermite.rs), so browser and native
//! results agree to f32 rounding, and double-single is as much more
//! accurate in the browser as natively.
#![cfg(target_arch = "wasm32")]

use wasm_bindgen_test::*;
use webgrav::direct::reference::{acc_errors, forces, pot_errors, ErrorStats};
use webgrav::direct::DirectSolver;
use webgrav::gpu::GpuContext;
use webgrav::sim::{GpuParticles, Model, SimConfig, Simulation, SolverKind};

#[path = "common/hermite_input.rs"]
mod hermite_input;

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

fn hermite_bodies(n: usize) -> Vec<webgrav::direct::reference::Body64> {
    hermite_input::bodies(n, 0.01)
}

/// Median relative errors (acc, pot, jerk, snap) of one Hermite kernel
/// variant in the browser against the f64 reference, and the number of
/// wrong nearest neighbours.
async fn hermite_errors(
    ctx: &GpuContext,
    b: &[webgrav::direct::reference::Body64],
    precision: webgrav::direct::hermite_force::Precision,
) -> ([ErrorStats; 4], usize) {
    use webgrav::direct::hermite_force::{Force64, HermiteGpu, Order, Sinks};
    use webgrav::direct::reference::{hermite_forces, rel_error3};
    let n = b.len();
    let mut gpu = HermiteGpu::new(ctx, n as u32, n as u32, 0.01).unwrap();
    hermite_input::upload(&mut gpu, b);
    let all: Vec<u32> = (0..n as u32).collect();
    let scope = ctx.device.push_error_scope(wgpu::ErrorFilter::Validation);
    let res = gpu
        .evaluate(0.0, Sinks::Active(&all), Order::Six, precision)
        .await
        .unwrap();
    // The browser reports invalid WGSL or bindings only through error
    // scopes (the results would silently stay zero).
    if let Some(e) = scope.pop().await {
        panic!("WebGPU validation error: {e}");
    }
    let g: Vec<Force64> = res.iter().map(Force64::from).collect();
    let r = hermite_forces(b, &(0..n).collect::<Vec<_>>(), 0.01);
    let stats = |f: &dyn Fn(&Force64, &webgrav::direct::reference::HermiteF64) -> f64| {
        ErrorStats::of(&g.iter().zip(&r).map(|(g, r)| f(g, r)).collect::<Vec<_>>())
    };
    let nn_wrong = g
        .iter()
        .zip(&r)
        .enumerate()
        .filter(|(i, (g, r))| {
            let Some(o) = b.get(g.nn_id as usize) else {
                return true;
            };
            let d2: f64 = (0..3).map(|k| (o.pos[k] - b[*i].pos[k]).powi(2)).sum();
            g.nn_id as usize != r.nn && (d2 - r.nn_d2).abs() > 1e-5 * r.nn_d2
        })
        .count();
    (
        [
            stats(&|g, r| rel_error3(g.acc, r.acc)),
            stats(&|g, r| ((g.pot - r.pot) / r.pot).abs()),
            stats(&|g, r| rel_error3(g.jerk, r.jerk)),
            stats(&|g, r| rel_error3(g.snap, r.snap)),
        ],
        nn_wrong,
    )
}

// The Hermite kernels (6th order: acc, pot, jerk, snap, nearest neighbour)
// in f32 and double-single on N = 1024, with the bounds of
// tests/hermite_kernels.rs (see the reasoning there), including that DS is
// clearly more accurate: a browser compiler that reassociated the two-sum
// error terms away would fail the ratio checks.
#[wasm_bindgen_test]
async fn hermite_kernels_match_f64_in_browser() {
    use webgrav::direct::hermite_force::Precision;
    let ctx = gpu().await;
    let b = hermite_bodies(1024);
    let ([acc, pot, jerk, snap], nn) = hermite_errors(&ctx, &b, Precision::F32).await;
    let ([dacc, dpot, djerk, dsnap], dnn) = hermite_errors(&ctx, &b, Precision::Ds).await;
    web_sys::console::log_1(
        &format!(
            "browser hermite f32: acc {acc:?} pot {pot:?} jerk {jerk:?} snap {snap:?}\n\
             ds: acc {dacc:?} pot {dpot:?} jerk {djerk:?} snap {dsnap:?}"
        )
        .into(),
    );
    assert!(acc.median < 2e-6 && acc.max < 2e-5, "acc {acc:?}");
    assert!(pot.median < 2e-6 && pot.max < 1e-5, "pot {pot:?}");
    assert!(jerk.median < 3e-6 && jerk.max < 1e-4, "jerk {jerk:?}");
    assert!(snap.median < 5e-6 && snap.p99 < 1e-4, "snap {snap:?}");
    assert!(dacc.median < 1.5e-7 && dacc.max < 2e-6, "ds acc {dacc:?}");
    assert!(dpot.median < 3e-8 && dpot.max < 2e-7, "ds pot {dpot:?}");
    assert!(djerk.median < 1e-6 && djerk.max < 5e-5, "ds jerk {djerk:?}");
    assert!(dsnap.median < 5e-6 && dsnap.p99 < 1e-4, "ds snap {dsnap:?}");
    assert!(
        dacc.median < acc.median / 2.0,
        "DS acc not better: {dacc:?} vs {acc:?}"
    );
    assert!(
        dpot.median < pot.median / 4.0,
        "DS pot not better: {dpot:?} vs {pot:?}"
    );
    assert_eq!((nn, dnn), (0, 0), "nearest neighbours differ");
}

// A short 6th-order block-step run in the browser (every step awaits its
// read-back, no blocking): N = 128, eps = 1/64, 1/8 time unit. Measured
// 1.1e-10 in headless Chromium (108 block steps); tests/hermite.rs sees
// 1e-9 over 1/4 unit at N = 256 natively. The bound 1e-7 allows other
// rounding and sits far below a broken step (>1e-4).
#[wasm_bindgen_test]
async fn hermite6_block_steps_in_browser() {
    use webgrav::direct::hermite::{HermiteConfig, HermiteSimulation};
    use webgrav::direct::hermite_force::{Order, Precision};
    let ctx = gpu().await;
    let p = Model::Plummer.generate(128, 5).unwrap();
    let config = HermiteConfig::new(Order::Six, Precision::Ds, 0.02, 1.0 / 64.0);
    let scope = ctx.device.push_error_scope(wgpu::ErrorFilter::Validation);
    let mut sim = HermiteSimulation::new(&ctx, &p, config, 0.0).await.unwrap();
    let e0 = sim.energy().await.unwrap().2;
    sim.run_until(0.125).await.unwrap();
    let e1 = sim.energy().await.unwrap().2;
    if let Some(e) = scope.pop().await {
        panic!("WebGPU validation error: {e}");
    }
    let err = ((e1 - e0) / e0).abs();
    web_sys::console::log_1(
        &format!(
            "browser hermite6: |dE/E| = {err:e}, {} block steps, {} evaluations",
            sim.stats.block_steps, sim.stats.force_evaluations
        )
        .into(),
    );
    assert!(err < 1e-7 && err > 0.0, "energy error {err}");
    assert!(sim.stats.block_steps > 8, "too few block steps");
    assert_eq!(sim.time, 0.125);
    assert!(sim.bodies.iter().all(|b| b.t0 == 0.125));
}
