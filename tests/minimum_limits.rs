//! WebGPU's minimum limits, the budget of a phone or an integrated GPU: a
//! device asked for the spec's default limits (128 MiB per storage
//! binding, 16 KiB of workgroup storage, 8 storage buffers per stage, 256
//! invocations per workgroup) and no optional feature runs every solver
//! with the accuracy it has on the adapter's full limits, and the renderer
//! draws what it draws there. Natively `WEBGRAV_LIMITS=minimum` asks any
//! command for that device.
#![cfg(not(target_arch = "wasm32"))]

mod common;

use common::{tmp, webgrav};
use pollster::block_on;
use webgrav::app::{max_particles_within, settings::Settings};
use webgrav::direct::reference;
use webgrav::gpu::{GpuContext, LimitsRequest};
use webgrav::run::{Readout, Run, SolverKind};

fn minimum_device() -> GpuContext {
    let instance =
        wgpu::Instance::new(wgpu::InstanceDescriptor::new_without_display_handle_from_env());
    block_on(GpuContext::with_limits(
        &instance,
        None,
        LimitsRequest::WebGpuMinimum,
    ))
    .expect("a device at WebGPU's default limits")
}

/// The CLI, asked for a device at WebGPU's minimum limits.
fn webgrav_at_minimum(args: &[&str]) -> (bool, String, String) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_webgrav"))
        .args(args)
        .env(LimitsRequest::ENV, "minimum")
        .output()
        .expect("run webgrav");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn the_device_has_webgpus_default_limits_and_no_optional_feature() {
    let ctx = minimum_device();
    let (got, spec) = (ctx.device.limits(), wgpu::Limits::default());
    assert_eq!(spec.max_storage_buffer_binding_size, 128 << 20);
    assert_eq!(spec.max_compute_workgroup_storage_size, 16 << 10);
    assert_eq!(spec.max_storage_buffers_per_shader_stage, 8);
    assert_eq!(spec.max_compute_invocations_per_workgroup, 256);
    assert_eq!(got, spec);
    assert_eq!(ctx.device.features(), wgpu::Features::empty());
    assert!(!ctx.has_timestamps && !ctx.has_f64 && ctx.subgroup_sizes.is_none());

    // The largest N follows the limits: what `info` prints, and the page
    // offers (`app::max_particles` of the same device).
    let (ok, stdout, stderr) = webgrav_at_minimum(&["info"]);
    assert!(ok, "{stderr}");
    assert!(stdout.contains("WebGPU's minimum"), "{stdout}");
    for &solver in SolverKind::ALL {
        let max = max_particles_within(&spec, solver);
        assert!(
            stdout.contains(&format!("max particles, {}: {max}\n", solver.name())),
            "{stdout}"
        );
        assert_eq!(webgrav::app::device_max_particles(&ctx, solver), max);
    }
    // 128 MiB of 16-byte records, and the tree's own arrays below that.
    let tree = max_particles_within(&spec, SolverKind::Tree);
    assert!(tree > 1_000_000 && tree <= 8 << 20, "{tree}");
}

#[test]
fn a_bad_limits_request_is_refused_by_name() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_webgrav"))
        .arg("info")
        .env(LimitsRequest::ENV, "phone")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("WEBGRAV_LIMITS=phone") && stderr.contains("minimum"),
        "{stderr}"
    );
}

/// The first and last read-outs of `query`'s model run to `t_end`.
fn run(ctx: &GpuContext, query: &str, t_end: f64) -> (Readout, Readout) {
    let (s, warnings) = Settings::from_query(query);
    assert!(warnings.is_empty(), "{query}: {warnings:?}");
    let model = block_on(s.generate_on(ctx)).unwrap();
    block_on(async {
        let mut run = Run::new(ctx, &model.particles, 0.0, s.run.validate().unwrap())
            .await
            .unwrap();
        let first = run.readout(ctx).await.unwrap();
        run.run_to(ctx, t_end, |_, _| true).await.unwrap();
        (first, run.readout(ctx).await.unwrap())
    })
}

fn median(mut x: Vec<f64>) -> f64 {
    x.sort_by(f64::total_cmp);
    x[x.len() / 2]
}

// Each solver: its forces against the f64 direct sum, and its energy over
// a short run, to the bounds it meets on the adapter's own limits; the
// end state next to that run's (the kernels may take other paths, e.g.
// without subgroups, so rounding differs, never more).
#[test]
fn every_solver_runs_within_the_minimum_limits() {
    let (small, full) = (minimum_device(), common::gpu());
    for (solver, n, acc_median, energy) in [
        ("direct", 1024, 1e-6, 1e-5),
        ("tree", 2048, 2e-3, 1e-4),
        ("hermite4", 256, 1e-6, 1e-6),
        ("hermite6", 256, 1e-6, 1e-6),
    ] {
        let query = format!("model=plummer&n={n}&seed=5&solver={solver}&eps=0.02&dt=0.0078125");
        let (first, last) = run(&small, &query, 0.125);
        let p = &first.snapshot.particles.pos_mass;
        let exact = reference::forces(p, 0.02);
        let err = median(reference::acc_errors(&first.acc_pot, &exact));
        assert!(err < acc_median, "{solver}: median force error {err:e}");
        let de = last.energy_error();
        assert!(
            de.is_finite() && de < energy,
            "{solver}: |dE/E| = {de:e} at t = {}",
            last.snapshot.time
        );

        let (_, there) = run(&full, &query, 0.125);
        assert_eq!(last.snapshot.time, there.snapshot.time, "{solver}");
        let worst = last
            .snapshot
            .particles
            .pos_mass
            .iter()
            .zip(&there.snapshot.particles.pos_mass)
            .flat_map(|(a, b)| (0..3).map(move |k| (a.pos[k] - b.pos[k]).abs()))
            .fold(0f32, f32::max);
        assert!(worst < 1e-4, "{solver}: positions differ by {worst}");
    }
}

// The tree's accuracy measure and the double-single reference kernel, as
// `forces --compare ds` runs them, and the renderer with the tree's cells
// over it: the same picture as on the adapter's limits.
#[test]
fn forces_and_pictures_are_the_same_within_the_minimum_limits() {
    let args = [
        "forces",
        "-n",
        "1500",
        "--seed",
        "2",
        "--solver",
        "tree",
        "--compare",
        "ds",
        "--thetas",
        "0.5",
    ];
    let (ok, small, stderr) = webgrav_at_minimum(&args);
    assert!(ok, "{stderr}");
    let (ok, full, stderr) = webgrav(&args);
    assert!(ok, "{stderr}");
    let median = |line: &str| -> f64 {
        let v: serde_json::Value = serde_json::from_str(line.lines().next().unwrap()).unwrap();
        v["acc_error"]["median"].as_f64().unwrap()
    };
    let (a, b) = (median(&small), median(&full));
    assert!(a < 1e-3 && (a - b).abs() < 0.05 * b, "{small} vs {full}");

    let snap = tmp("minimum_limits.tipsy");
    let (ok, _, stderr) = webgrav(&[
        "run", "--model", "plummer", "-n", "3000", "--seed", "4", "--t-end", "0", "--out", &snap,
    ]);
    assert!(ok, "{stderr}");
    let render = |out: &str, minimum: bool| {
        let args = [
            "render", &snap, "-o", out, "--width", "320", "--height", "240", "--cells", "3",
        ];
        let (ok, _, stderr) = if minimum {
            webgrav_at_minimum(&args)
        } else {
            webgrav(&args)
        };
        assert!(ok, "{stderr}");
        std::fs::read(out).unwrap()
    };
    let (small, full) = (
        render(&tmp("minimum.png"), true),
        render(&tmp("full.png"), false),
    );
    assert!(small.len() > 1000);
    assert!(small == full, "the pictures differ");
}
