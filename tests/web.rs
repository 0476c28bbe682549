//! The same cases in a real browser (headless Chromium, WebGPU on
//! SwiftShader): `tests/common/cases.rs` holds the inputs and the bounds,
//! shared with the native tests (tests/direct_forces.rs,
//! tests/conservation.rs, tests/tree.rs, tests/hermite_kernels.rs,
//! tests/hermite.rs), so browser and native results agree to f32 rounding,
//! and double-single is as much more accurate in the browser as natively.
#![cfg(target_arch = "wasm32")]

#[path = "common/cases.rs"]
mod cases;

use cases::*;
use wasm_bindgen_test::*;
use webgrav::gpu::GpuContext;
use webgrav::hermite::{Order, Precision};
use webgrav::run::SolverKind;

wasm_bindgen_test_configure!(run_in_browser);

async fn gpu() -> GpuContext {
    GpuContext::headless()
        .await
        .expect("WebGPU adapter in the browser")
}

fn log(text: String) {
    web_sys::console::log_1(&text.into());
}

// The page's timings (a frame's parts, `compile_ms`) read the page's
// `performance.now()`, not `Date.now()` (whole milliseconds since 1970).
#[wasm_bindgen_test]
fn timings_read_the_pages_performance_clock() {
    let performance = web_sys::window()
        .and_then(|w| w.performance())
        .expect("a page has performance");
    let before = performance.now();
    let now = webgrav::gpu::timing::now_ms();
    let after = performance.now();
    assert!(
        before <= now && now <= after,
        "{before} <= {now} <= {after}"
    );
}

#[wasm_bindgen_test]
async fn direct_kernel_matches_f64_in_browser() {
    let ctx = gpu().await;
    let (acc, pot) = direct_errors(&ctx, 2048, 0.01).await;
    log(format!(
        "browser ({}): acc {acc:?} pot {pot:?}",
        ctx.adapter_summary()
    ));
    assert_direct_bounds(&acc, &pot);
}

#[wasm_bindgen_test]
async fn leapfrog_conserves_energy_in_browser() {
    let ctx = gpu().await;
    let (de, p, dl, run) = leapfrog_conservation(&ctx, SolverKind::Direct, 512, 4).await;
    log(format!(
        "browser leapfrog: |dE/E| = {de:e}, |P| = {p:e}, |dL| = {dl:e}"
    ));
    assert!(de < LEAPFROG_DIRECT_ENERGY, "energy error {de}");
    assert!(p < LEAPFROG_DIRECT_MOMENTUM, "momentum {p}");
    assert!(dl < LEAPFROG_DIRECT_ANGULAR, "angular momentum drift {dl}");
    assert!((run.time() - 0.25).abs() < 1e-12);
}

#[wasm_bindgen_test]
async fn tree_solver_matches_f64_in_browser() {
    let ctx = gpu().await;
    let acc = tree_errors(&ctx, 4096, 0.5).await;
    log(format!("browser tree θ=0.5: {acc:?}"));
    assert!(acc.median < TREE_HALF_MEDIAN, "median {}", acc.median);
    assert!(acc.p99 < TREE_HALF_P99, "p99 {}", acc.p99);
    assert!(acc.max < TREE_HALF_MAX, "max {}", acc.max);
    // The acceleration MAC on the page's (portable) walk, as natively.
    let accel = tree_accel_errors(&ctx, 4096, TREE_ACCEL_ALPHA).await;
    log(format!("browser tree α={TREE_ACCEL_ALPHA}: {accel:?}"));
    assert!(accel.median < TREE_ACCEL_MEDIAN, "median {}", accel.median);
    assert!(accel.p99 < TREE_ACCEL_P99, "p99 {}", accel.p99);
    assert!(accel.max < TREE_ACCEL_MAX, "max {}", accel.max);
}

#[wasm_bindgen_test]
async fn the_page_starts_a_plummer_sphere_on_the_gpu_as_from_its_read_back_in_browser() {
    let ctx = gpu().await;
    page_start_on_gpu(&ctx, 3000).await;
}

#[wasm_bindgen_test]
async fn the_page_starts_a_galaxy_on_the_gpu_as_from_the_host_in_browser() {
    let ctx = gpu().await;
    page_start_of_a_galaxy_on_gpu(&ctx, 3000).await;
}

#[wasm_bindgen_test]
async fn a_light_read_out_of_a_galaxy_is_its_whole_read_out_in_browser() {
    let ctx = gpu().await;
    light_readout_of_a_galaxy(&ctx, 40_000).await;
}

#[wasm_bindgen_test]
async fn a_light_read_out_of_a_run_is_its_whole_read_out_in_browser() {
    let ctx = gpu().await;
    light_readout_of_a_run(&ctx, 6000).await;
}

// wgpu's WebGPU backend reports every adapter as `DeviceType::Other`; the
// context takes the adapter's kind from around wgpu's own request
// (`gpu::browser_adapter`), so on SwiftShader, the adapter these tests run
// on, it sizes its dispatches for a CPU as it does natively on lavapipe
// (the tree tests here then run with those sizes). Its features and
// limits go to the log (`--nocapture`), one line per browser.
#[wasm_bindgen_test]
async fn software_adapter_is_sized_as_a_cpu() {
    use webgrav::gpu::context::CPU_STRIDED_WORKGROUPS;
    use webgrav::gpu::DispatchSizing;
    let ctx = gpu().await;
    let l = ctx.device.limits();
    log(format!(
        "browser adapter: {}; features {:?}; storage binding {} B, workgroup storage {} B, \
         {} storage buffers per stage, {} invocations",
        ctx.adapter_summary(),
        ctx.device.features(),
        l.max_storage_buffer_binding_size,
        l.max_compute_workgroup_storage_size,
        l.max_storage_buffers_per_shader_stage,
        l.max_compute_invocations_per_workgroup
    ));
    assert_eq!(ctx.adapter_info.device_type, wgpu::DeviceType::Cpu);
    assert_eq!(
        ctx.dispatch_sizing,
        DispatchSizing::Strided {
            max_workgroups: CPU_STRIDED_WORKGROUPS
        }
    );
}

// Whether this browser's adapter offers the WebGPU feature `name`, asked
// of `navigator.gpu` directly (not through wgpu, which is under test).
async fn browser_offers(name: &str) -> bool {
    use js_sys::{Function, Promise, Reflect};
    let get = |o: &wasm_bindgen::JsValue, k: &str| Reflect::get(o, &k.into()).unwrap();
    let gpu = get(&web_sys::window().unwrap().navigator().into(), "gpu");
    let request: Function = get(&gpu, "requestAdapter").into();
    let adapter = wasm_bindgen_futures::JsFuture::from(Promise::from(request.call0(&gpu).unwrap()))
        .await
        .unwrap();
    let features = get(&adapter, "features");
    let has: Function = get(&features, "has").into();
    has.call1(&features, &name.into()).unwrap().as_bool() == Some(true)
}

// wgpu's WebGPU backend never asks for `subgroups`; the context asks for it
// around wgpu where the browser offers it (headless Chromium's SwiftShader
// does, Firefox ESR does not), and the walk's subgroup path, with the
// directives a browser's compiler needs, gives the same forces as
// natively. Where the browser has none, the device has none and the walk
// takes the portable path (tree_solver_matches_f64_in_browser).
#[wasm_bindgen_test]
async fn tree_subgroup_walk_matches_f64_in_browser() {
    use webgrav::gpu::SubgroupUse;
    use webgrav::tree::walk::WalkPath;
    let mut ctx = gpu().await;
    log(format!("browser subgroup sizes: {:?}", ctx.subgroup_sizes));
    let user_agent = web_sys::window().unwrap().navigator().user_agent().unwrap();
    // Chromium always offers them on SwiftShader: a context without them
    // there is the bug this test is for.
    if !user_agent.contains("Chrome/") && !browser_offers("subgroups").await {
        assert!(ctx.subgroup_sizes.is_none(), "{:?}", ctx.subgroup_sizes);
        ctx.subgroups = SubgroupUse::Always;
        assert_eq!(WalkPath::for_tree(&ctx, 4096), WalkPath::Portable);
        log(format!("{user_agent}: no subgroups, the portable walk"));
        return;
    }
    assert!(
        ctx.subgroup_sizes.is_some(),
        "the browser offers subgroups: the device must have them"
    );
    ctx.subgroups = SubgroupUse::Always;
    assert_eq!(WalkPath::for_tree(&ctx, 4096), WalkPath::Subgroups);
    let acc = tree_errors(&ctx, 4096, 0.5).await;
    log(format!("browser subgroup tree θ=0.5: {acc:?}"));
    assert!(acc.median < TREE_HALF_MEDIAN, "median {}", acc.median);
    assert!(acc.p99 < TREE_HALF_P99, "p99 {}", acc.p99);
    assert!(acc.max < TREE_HALF_MAX, "max {}", acc.max);
}

// The Hermite kernels (6th order: acc, pot, jerk, snap, nearest neighbour)
// in f32 and double-single on N = 1024, including that DS is clearly more
// accurate: a browser compiler that reassociated the two-sum error terms
// away would fail the ratio checks.
// WebGPU has no f64 in shaders: `dp` is refused with a message that says
// why and what to use instead, before any kernel is built.
#[wasm_bindgen_test]
async fn dp_is_refused_in_the_browser() {
    let ctx = gpu().await;
    assert!(!ctx.has_f64, "a browser adapter reported f64 in shaders");
    let mut gpu = webgrav::hermite::HermiteGpu::new(&ctx, 16, 16, 0.01).unwrap();
    let e = gpu
        .evaluate(
            0.0,
            webgrav::hermite::Sinks::Active(&[0]),
            Order::Four,
            Precision::Dp,
        )
        .await
        .unwrap_err()
        .to_string();
    assert!(e.contains("SHADER_F64") && e.contains("use ds"), "{e}");
}

#[wasm_bindgen_test]
async fn hermite_kernels_match_f64_in_browser() {
    let ctx = gpu().await;
    let b = hermite_bodies(1024, 0.01);
    let all: Vec<usize> = (0..b.len()).collect();
    let f = hermite_errors(&ctx, &b, 0.01, Order::Six, Precision::F32, &all, None).await;
    let ds = hermite_errors(&ctx, &b, 0.01, Order::Six, Precision::Ds, &all, None).await;
    log(format!("browser hermite f32: {f:?}\nds: {ds:?}"));
    assert_hermite_f32_bounds(&f);
    assert_hermite_ds_bounds(&ds, &f);
}

#[wasm_bindgen_test]
async fn hermite6_block_steps_in_browser() {
    let ctx = gpu().await;
    let (err, sim) = hermite6_short_run(&ctx).await;
    log(format!(
        "browser hermite6: |dE/E| = {err:e}, {} block steps, {} evaluations",
        sim.stats.block_steps, sim.stats.force_evaluations
    ));
    assert_hermite6_short_run(err, &sim);
}
